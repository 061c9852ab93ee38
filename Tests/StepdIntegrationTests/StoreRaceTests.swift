import Foundation
import Locking
import StepProtocol
import XCTest

/// History reads racing a store that gives its database up (the file deleted under it, a full disk): a read
/// either answers or gets an ERROR that says the store's state; the daemon never dies, and what it counted
/// meanwhile is saved once a database can be written again. About 35 s: each fault runs long enough (12 s of
/// deletions, three fills) that the unfixed daemon died by SIGSEGV in every run of either test.
final class StoreRaceTests: XCTestCase {
    /// Clients asking for ten years of day bins (3,650 range sums a request), over and over until `finish`, and
    /// one asking for today's hours: on a loaded machine a ten-year read can outlast each of the store's short
    /// spells of being open between two faults, and the short one shows that those spells are served.
    final class HistoryReaders: Sendable {
        private struct Tally {
            var stopped = false
            var histories = 0
            var errors: [String] = []
            /// Anything else: a connection closed, a reply that is neither HISTORY nor ERROR.
            var failures: [String] = []
        }
        private let tally = Locked(Tally())
        private let group = DispatchGroup()
        var histories: Int { tally.withLock { $0.histories } }
        var failures: [String] { tally.withLock { $0.failures } }

        init(socket: String, count: Int = 4) {
            let from = Timestamp.string(Date().addingTimeInterval(-3650 * 86_400))
            let long = "{\"cmd\":\"history\",\"bin\":\"day\",\"from\":\"\(from)\"}"
            let short = "{\"cmd\":\"history\",\"bin\":\"hour\",\"from\":\"\(Timestamp.string(Date().addingTimeInterval(-86_400)))\"}"
            for request in Array(repeating: long, count: count) + [short] {
                DispatchQueue.global().async(group: group) { [self] in
                    do {
                        let client = try SocketClient(path: socket, receiveTimeout: 20)
                        while !tally.withLock({ $0.stopped }) {
                            try client.sendLine(request)
                            let reply = try client.readObject()
                            let kind = reply["class"] as? String
                            let text = kind == "ERROR" ? reply["message"] as? String ?? "\(reply)" : "unexpected reply \(reply)"
                            tally.withLock {
                                switch kind {
                                case "HISTORY": $0.histories += 1
                                case "ERROR": $0.errors.append(text)
                                default: $0.failures.append(text)
                                }
                            }
                            // An ERROR comes at once while the store is away: a pause spares the CPU (tests run
                            // side by side) without leaving the store's short spells of being open unread.
                            if reply["class"] as? String == "ERROR" { usleep(10_000) }  // the pace of the load or probe under test, not a wait for an event
                        }
                    } catch {
                        tally.withLock { $0.failures.append("\(error)") }
                    }
                }
            }
        }

        func finish() {
            tally.withLock { $0.stopped = true }
            group.wait()
        }

        /// The ERRORs that do not say the store's state (`history is unavailable: the store is failed: ...`).
        var errorsWithoutState: [String] {
            tally.withLock { $0.errors.filter { !$0.hasPrefix("history is unavailable: the store is ") } }
        }

        var summary: String {
            tally.withLock { "\($0.histories) HISTORY replies, \($0.errors.count) ERRORs, \($0.failures.count) failures" }
        }
    }

    private func store(_ status: [String: Any]) -> [String: Any] { status["store"] as? [String: Any] ?? [:] }

    private func steps(_ socket: String) throws -> Int {
        try XCTUnwrap(try SocketClient(path: socket).request(["cmd": "steps"])["steps"] as? Int)
    }

    private func status(_ socket: String) throws -> [String: Any] {
        store(try SocketClient(path: socket).request(["cmd": "status"]))
    }

    /// "died by signal 11" or "exited 0": what became of a daemon that is no longer running.
    private static func fate(_ process: Process) -> String {
        process.terminationReason == .uncaughtSignal ? "died by signal \(process.terminationStatus)"
            : "exited \(process.terminationStatus)"
    }

    /// The count in the stop line ("stepd: stopped; N steps since ... saved to ...").
    private func savedCount(_ log: String) throws -> Int {
        let line = try XCTUnwrap(log.split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") }, "no stop line:\n\(log)")
        XCTAssertTrue(line.contains(" saved to "), String(line))
        return try XCTUnwrap(Int(line.split(separator: " ")[2]), String(line))
    }

    /// A board lying still, for a restart that adds nothing of its own.
    private func still(in directory: TemporaryDirectory) throws -> String {
        var text = "t,x,y,z\n"
        for i in 0..<600 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        let path = directory.file("still.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func checkCountAfterRestart(_ saved: Int, state: String, directory: TemporaryDirectory) throws {
        let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try steps(again.socketPath), saved, "the count goes on after a restart")
        XCTAssertEqual(again.terminate(), 0)
    }

    func testFourHistoryReadersWhileTheDatabaseIsDeletedEveryPointSevenSeconds() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                                            "--state-dir", state], directory: directory)
        try daemon.waitForSteps("steps") { ($0["steps"] as? Int ?? 0) > 5 }
        let readers = HistoryReaders(socket: daemon.socketPath)
        let end = Date().addingTimeInterval(12)
        var deletions = 0
        while Date() < end, daemon.process.isRunning {
            for suffix in ["", "-wal", "-shm"] { unlink(state + "/stepd.sqlite" + suffix) }
            deletions += 1
            usleep(700_000)  // the pace of the deletions (the fault under test), not a wait for an event
        }
        let alive = daemon.process.isRunning
        readers.finish()
        print("\(deletions) deletions: \(readers.summary)")
        XCTAssertTrue(alive, "stepd \(Self.fate(daemon.process)) with 4 history readers and the file deleted every 0.7 s; log:\n\(daemon.log)")
        guard alive else { return }
        XCTAssertEqual(readers.failures, [])
        XCTAssertGreaterThan(readers.histories, 0)
        XCTAssertEqual(readers.errorsWithoutState, [], "a read during a fault says the store's state")
        try daemon.waitUntil(timeout: 15, "store back") { self.store($0)["state"] as? String == "ok" }
        let counted = try steps(daemon.socketPath)
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
        let saved = try savedCount(daemon.log)
        XCTAssertGreaterThanOrEqual(saved, counted)
        try checkCountAfterRestart(saved, state: state, directory: directory)
    }

    /// The state directory on a small tmpfs of the daemon's own mount namespace, filled to the last byte with
    /// `dd` and freed again, three times, while four clients read history: commits fail with a full disk, the
    /// store gives the database up and reopens it.
    func testFourHistoryReadersWhileTheDiskFillsAndFrees() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare for a private tmpfs")
        }
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let socket = directory.file("stepd.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["-m", "--propagation", "private", "sh", "-c",
                             "mount -t tmpfs -o size=4m tmpfs \"$1\" && shift && exec \"$@\"", "sh", state,
                             Binaries.stepd, "--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                             "--state-dir", state, "--socket", socket]
        let logPath = directory.file("stepd.log")
        XCTAssertTrue(FileManager.default.createFile(atPath: logPath, contents: nil))
        // One handle for both, so that the two streams append rather than write over each other.
        let logHandle = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        func inside(_ command: [String]) throws -> CommandResult {
            try runCommand("/usr/bin/nsenter", ["-t", String(process.processIdentifier), "-m"] + command)
        }
        try pollUntil("stepd to listen", timeout: 20, detail: log()) {
            guard process.isRunning else { throw ProcessExited(what: "stepd", log: log()) }
            return (try? SocketClient(path: socket)) != nil
        }
        try pollUntil("steps", timeout: 30, detail: log()) { try steps(socket) > 5 }

        let readers = HistoryReaders(socket: socket)
        var fills = 0
        for _ in 0..<3 where process.isRunning {
            // dd stops at the last free byte (ENOSPC, exit 1); the next commit finds the disk full.
            _ = try inside(["dd", "if=/dev/zero", "of=\(state)/fill", "bs=64k"])
            fills += 1
            try? pollUntil("store failed with a full disk", timeout: 10, detail: log()) {
                guard process.isRunning else { return true }
                return try status(socket)["state"] as? String == "failed"
            }
            usleep(1_500_000)  // the disk stays full for the readers (the fault under test), not a wait for an event
            XCTAssertEqual(try inside(["rm", "\(state)/fill"]).status, 0)
            try? pollUntil("store back", timeout: 15, detail: log()) {
                guard process.isRunning else { return true }
                return try status(socket)["state"] as? String == "ok"
            }
        }
        let alive = process.isRunning
        readers.finish()
        print("\(fills) fills of the tmpfs: \(readers.summary)")
        XCTAssertTrue(alive, "stepd \(Self.fate(process)) with 4 history readers on a disk filled and freed; log:\n\(log())")
        guard alive else { return }
        XCTAssertEqual(readers.failures, [])
        XCTAssertGreaterThan(readers.histories, 0)
        XCTAssertEqual(readers.errorsWithoutState, [], "a read during a fault says the store's state")
        XCTAssertEqual(try status(socket)["state"] as? String, "ok", log())
        let counted = try steps(socket)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit, log())
        XCTAssertEqual(process.terminationStatus, 0, log())
        XCTAssertGreaterThanOrEqual(try savedCount(log()), counted)
    }
}
