import Foundation
import StepProtocol
import XCTest

/// Store faults are states: the daemon says what happened in STATUS, counts on in memory, and when a
/// database can be used again adds what it counted to what was saved, never starting over from 0 nor
/// writing over the saved count. And one daemon per state directory.
final class StoreFaultTests: XCTestCase {
    private func store(_ status: [String: Any]) -> [String: Any] { status["store"] as? [String: Any] ?? [:] }

    private func steps(_ daemon: Daemon) throws -> Int {
        try XCTUnwrap(try daemon.connect().request(["cmd": "steps"])["steps"] as? Int)
    }

    private func walking(state: String, directory: TemporaryDirectory, socket: String = "stepd.sock") throws -> Daemon {
        try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                               "--state-dir", state], directory: directory, socketName: socket)
    }

    /// The count in the daemon's stop line ("stepd: stopped; N steps since ... saved to ...").
    private func savedCount(_ daemon: Daemon) throws -> Int {
        let line = try XCTUnwrap(daemon.log.split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") },
                                 "no stop line:\n\(daemon.log)")
        XCTAssertTrue(line.contains(" saved to "), String(line))
        return try XCTUnwrap(Int(line.split(separator: " ")[2]), String(line))
    }

    private func waitForSteps(_ daemon: Daemon, above count: Int) throws {
        try daemon.waitUntil(timeout: 30, "steps above \(count)") { _ in try self.steps(daemon) > count }
    }

    /// Deleted, its directory removed, replaced: each is a `failed` store with the reason, the count goes on,
    /// and a new database takes it over, so that a restart continues from everything counted.
    func testDatabaseDeletedRemovedOrReplacedWhileRunningIsAStateAndNoStepIsLost() throws {
        let cases: [(String, (String) throws -> Void)] = [
            ("the file was deleted while open", { state in
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: state + "/stepd.sqlite" + suffix) }
            }),
            ("its directory was removed while open", { state in try FileManager.default.removeItem(atPath: state) }),
            ("another file was put in its place while open", { state in
                let copy = state + "/copy.sqlite"
                try FileManager.default.copyItem(atPath: state + "/stepd.sqlite", toPath: copy)
                XCTAssertEqual(rename(copy, state + "/stepd.sqlite"), 0)
            }),
        ]
        for (reason, fault) in cases {
            let directory = try TemporaryDirectory()
            let state = directory.file("state")
            let daemon = try walking(state: state, directory: directory)
            try waitForSteps(daemon, above: 10)
            try fault(state)
            try daemon.waitUntil(timeout: 10, "store failed: \(reason)") { status in
                self.store(status)["state"] as? String == "failed"
                    && (self.store(status)["error"] as? String ?? "").contains(reason)
            }
            let during = try steps(daemon)
            try waitForSteps(daemon, above: during)
            try daemon.waitUntil(timeout: 15, "store back after: \(reason)") { self.store($0)["state"] as? String == "ok" }
            // Still one daemon per directory, a directory created again included.
            let second = try runCommand(Binaries.stepd, ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state,
                                                         "--socket", directory.file("second.sock")], timeout: 20)
            XCTAssertEqual(second.status, 75, "\(reason): \(second.stderr)")
            try waitForSteps(daemon, above: try steps(daemon))
            XCTAssertEqual(daemon.terminate(), 0)
            let saved = try savedCount(daemon)
            XCTAssertGreaterThan(saved, during, reason)
            let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                                   directory: directory, socketName: "again.sock")
            XCTAssertEqual(try steps(again), saved, "\(reason): the count goes on after a restart")
            XCTAssertEqual(again.terminate(), 0)
        }
    }

    /// Truncated, overwritten in place, its write-ahead log scribbled on: the same file (inode) with other
    /// contents, which SQLite would not notice before its next checkpoint mixed them with its own pages. At
    /// the next commit the store is `failed` with the reason, the changed file is set aside, and a fresh
    /// database takes the count in memory, so that a restart continues from everything counted.
    private func checkChangedInPlace(_ what: String, file name: String, truncate: Bool = false, at offset: UInt64 = 0) throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try walking(state: state, directory: directory)
        try waitForSteps(daemon, above: 10)
        let path = state + "/stepd.sqlite"
        let inode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: state + "/" + name), name)
        if truncate {
            try handle.truncate(atOffset: 0)
        } else {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        }
        try handle.close()
        let failed = try daemon.waitUntil(timeout: 10, "store failed: \(what)") { status in
            self.store(status)["state"] as? String == "failed"
                && (self.store(status)["error"] as? String ?? "").contains("by another program while open")
        }
        XCTAssertTrue((store(failed)["error"] as? String ?? "").contains(what), "\(failed)")
        let during = try steps(daemon)
        try waitForSteps(daemon, above: during)
        try daemon.waitUntil(timeout: 15, "a fresh database after: \(what)") { self.store($0)["state"] as? String == "ok" }
        let fresh = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
        XCTAssertNotEqual(fresh, inode, "the changed file is not written on")
        let kept = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasPrefix("stepd.sqlite.changed-") }
        XCTAssertFalse(kept.isEmpty, "the changed file is set aside")
        try waitForSteps(daemon, above: try steps(daemon))
        XCTAssertEqual(daemon.terminate(), 0)
        let saved = try savedCount(daemon)
        XCTAssertGreaterThan(saved, during)
        let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try steps(again), saved, "the count goes on after a restart")
        XCTAssertEqual(again.terminate(), 0)
    }

    func testDatabaseTruncatedInPlaceIsAFailedStoreAndAFreshDatabaseKeepsTheCount() throws {
        try checkChangedInPlace("truncated", file: "stepd.sqlite", truncate: true)
    }

    func testDatabaseOverwrittenInPlaceIsAFailedStoreAndAFreshDatabaseKeepsTheCount() throws {
        try checkChangedInPlace("overwritten in place", file: "stepd.sqlite")
    }

    func testWriteAheadLogScribbledOnIsAFailedStoreAndAFreshDatabaseKeepsTheCount() throws {
        try checkChangedInPlace("write-ahead log", file: "stepd.sqlite-wal", at: 32)
    }

    /// SIGTERM a moment after the database was deleted, before the store's next attempt to reopen it: the
    /// final save opens a new one rather than giving the count up.
    func testDatabaseDeletedThenSigtermWithinTheRetryWindowSavesTheCount() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try walking(state: state, directory: directory)
        try waitForSteps(daemon, above: 10)
        for suffix in ["", "-wal", "-shm"] { unlink(state + "/stepd.sqlite" + suffix) }
        try daemon.waitUntil(timeout: 10, "store failed") { self.store($0)["state"] as? String == "failed" }
        let counted = try steps(daemon)
        XCTAssertEqual(daemon.terminate(), 0)
        let saved = try savedCount(daemon)
        XCTAssertGreaterThanOrEqual(saved, counted)
        let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try steps(again), saved, "the count goes on after a restart")
        XCTAssertEqual(again.terminate(), 0)
    }

    /// SIGTERM at once after the file was truncated in place: the stop notices it, sets it aside and saves
    /// the count in a fresh database, rather than calling a count "saved" in a file that no longer holds it.
    func testDatabaseTruncatedThenSigtermSavesTheCountInAFreshDatabase() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try walking(state: state, directory: directory)
        try waitForSteps(daemon, above: 10)
        XCTAssertEqual(truncate(state + "/stepd.sqlite", 0), 0)
        let counted = try steps(daemon)
        XCTAssertEqual(daemon.terminate(), 0)
        let saved = try savedCount(daemon)
        XCTAssertGreaterThanOrEqual(saved, counted)
        XCTAssertTrue(daemon.log.contains("truncated by another program"), daemon.log)
        let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try steps(again), saved, "the count goes on after a restart")
        XCTAssertEqual(again.terminate(), 0)
    }

    /// A board lying still: a restarted daemon adds nothing of its own.
    private func still(in directory: TemporaryDirectory) throws -> String {
        var text = "t,x,y,z\n"
        for i in 0..<600 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        let path = directory.file("still.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The state directory unusable at start, in a mount namespace of the daemon's own: bound read-only over
    /// itself (a card that comes up read-only: the saved count is read and goes on), or hidden under an empty
    /// read-only mount (not mounted yet: counting starts in memory). Once the directory is back, the saved
    /// count and this run's are one: STEPS is their sum, and a restart goes on from it.
    func testStoreUnavailableAtStartKeepsTheSavedCountWhenItReturns() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare for a private read-only mount")
        }
        let variants = [
            (name: "read-only", hide: "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\"",
             restore: ["mount", "-o", "remount,bind,rw"], continues: true),
            (name: "not mounted yet", hide: "mount -t tmpfs -o ro tmpfs \"$1\"", restore: ["umount"], continues: false),
        ]
        for variant in variants {
            let directory = try TemporaryDirectory()
            let state = directory.file("state")
            let first = try walking(state: state, directory: directory, socket: "first.sock")
            try waitForSteps(first, above: 40)
            XCTAssertEqual(first.terminate(), 0)
            let saved = try savedCount(first)
            try checkUnavailableStart(variant.name, state: state, saved: saved, hide: variant.hide,
                                      restore: variant.restore, continues: variant.continues, directory: directory)
        }
    }

    private func checkUnavailableStart(_ name: String, state: String, saved: Int, hide: String, restore: [String],
                                       continues: Bool, directory: TemporaryDirectory) throws {
        let socket = directory.file("ro.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["-m", "--propagation", "private", "sh", "-c", hide + " && shift && exec \"$@\"", "sh", state,
                             Binaries.stepd, "--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                             "--state-dir", state, "--socket", socket]
        let logPath = directory.file("ro.log")
        XCTAssertTrue(FileManager.default.createFile(atPath: logPath, contents: nil))
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        var client: SocketClient?
        let deadline = Date().addingTimeInterval(20)
        while client == nil, Date() < deadline, process.isRunning {
            client = try? SocketClient(path: socket)
            usleep(50_000)  // poll interval of a wait for a state, not a fixed wait
        }
        let connection = try XCTUnwrap(client, "\(name): no daemon:\n\(log())")
        let status = try connection.request(["cmd": "status"])
        XCTAssertEqual(store(status)["state"] as? String, "failed", "\(name): \(status)")
        XCTAssertTrue((store(status)["error"] as? String ?? "").contains("Read-only file system"), "\(name): \(status)")
        let start = try XCTUnwrap(connection.request(["cmd": "steps"])["steps"] as? Int)
        XCTAssertEqual(start, continues ? saved : 0, "\(name): the count at start")
        var counted = start
        while counted < start + 5, Date() < deadline.addingTimeInterval(20) {
            counted = try XCTUnwrap(connection.request(["cmd": "steps"])["steps"] as? Int)
            usleep(100_000)  // poll interval of a wait for a state, not a fixed wait
        }
        let remount = try runCommand("/usr/bin/nsenter", ["-t", String(process.processIdentifier), "-m"] + restore + [state])
        XCTAssertEqual(remount.status, 0, remount.stderr)
        var merged = 0
        let back = Date().addingTimeInterval(20)
        while Date() < back {
            let status = try connection.request(["cmd": "status"])
            merged = try XCTUnwrap(connection.request(["cmd": "steps"])["steps"] as? Int)
            if store(status)["state"] as? String == "ok", merged >= saved + counted - start { break }
            usleep(100_000)  // poll interval of a wait for a state, not a fixed wait
        }
        XCTAssertGreaterThanOrEqual(merged, saved + counted - start, "\(name): saved \(saved) + \(counted - start) counted meanwhile; log:\n\(log())")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, log())
        let line = try XCTUnwrap(log().split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") }, log())
        let final = try XCTUnwrap(Int(line.split(separator: " ")[2]), log())
        XCTAssertGreaterThanOrEqual(final, merged, "\(name): \(line)")
        let again = try Daemon(arguments: ["--replay", try still(in: directory), "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try steps(again), final, "\(name): after a restart")
        // History agrees with the count: every step of both runs is in the minute bins.
        let since = try XCTUnwrap(try again.connect().request(["cmd": "steps"])["since"] as? String)
        let from = Timestamp.string(try XCTUnwrap(Timestamp.date(since)).addingTimeInterval(-60))
        let history = try again.connect().request(["cmd": "history", "bin": "minute", "from": from])
        XCTAssertEqual(history["steps"] as? Int, final, "\(name): history \(history)")
        XCTAssertEqual(again.terminate(), 0)
    }

    /// A crash that damages the write-ahead log in its middle: SQLite would drop the frames after the damage
    /// without a word. The store says so, keeps the log as it is, and counts in memory; once the log is
    /// dealt with (its sound frames checkpointed), the count goes on from what the database has plus what was
    /// counted meanwhile.
    func testDamagedWriteAheadLogIsAFailedStoreNotASilentLoss() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let first = try walking(state: state, directory: directory, socket: "first.sock")
        try waitForSteps(first, above: 30)
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let wal = state + "/stepd.sqlite-wal"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: wal)))
        let pageSize = Int(bytes[8]) << 24 | Int(bytes[9]) << 16 | Int(bytes[10]) << 8 | Int(bytes[11])
        let frames = (bytes.count - 32) / (24 + pageSize)
        XCTAssertGreaterThan(frames, 4, "the log holds several commits")
        // Flip bytes in the second frame's page: its checksum, and so every later frame's, fails.
        let second = 32 + (24 + pageSize) + 24 + 100
        for i in second..<(second + 16) { bytes[i] ^= 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: wal))

        let daemon = try walking(state: state, directory: directory)
        let status = try daemon.connect().request(["cmd": "status"])
        let error = store(status)["error"] as? String ?? ""
        XCTAssertEqual(store(status)["state"] as? String, "failed", "\(status)")
        XCTAssertTrue(error.contains("write-ahead log") && error.contains("frame 2 of \(frames)"), error)
        // A history asked meanwhile is refused with the code a client decides on, and STATUS's words.
        let history = try daemon.connect().request(["cmd": "history", "id": 1])
        XCTAssertEqual(history["class"] as? String, "ERROR", "\(history)")
        XCTAssertEqual(history["code"] as? String, "store_failed", "\(history)")
        XCTAssertEqual(history["message"] as? String, "history is unavailable: the store is failed: \(error)")
        try waitForSteps(daemon, above: 5)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: wal)), Data(bytes), "the log is left as it was")

        // The operator does what docs/service.md says: SQLite folds the sound frames in and empties the log.
        let checkpoint = try runCommand("/usr/bin/env", ["python3", "-c", """
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
            """, state + "/stepd.sqlite"])
        XCTAssertEqual(checkpoint.status, 0, checkpoint.stderr)
        let before = try steps(daemon)
        try daemon.waitUntil(timeout: 15, "store back once the log is checkpointed") { self.store($0)["state"] as? String == "ok" }
        XCTAssertGreaterThanOrEqual(try steps(daemon), before, "never a count started over")
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertGreaterThanOrEqual(try savedCount(daemon), before)
    }

    func testSecondDaemonOnTheSameStateDirectoryExitsSeventyFiveNamingTheHolder() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let first = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "first.sock")
        let second = try runCommand(Binaries.stepd, ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state,
                                                     "--socket", directory.file("second.sock")], timeout: 20)
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertTrue(second.stderr.contains("PID \(first.process.processIdentifier)") && second.stderr.contains(state),
                      second.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("second.sock")), "the second never listened")
        XCTAssertTrue(first.process.isRunning)
        XCTAssertEqual(try first.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
        // The lock goes with its holder, kill -9 included.
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let third = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "third.sock")
        XCTAssertEqual(third.terminate(), 0)
    }
}
