import Foundation
import StepProtocol
import XCTest

/// stepctl as people use it day to day (issue 28): a watcher that outlives `systemctl restart stepd`, dates
/// for `track` and `visits`, a socket the user may not open, an empty track, GPS switched off.
final class StepctlFollowTests: XCTestCase {
    private let replay = ["--replay", Binaries.bundledRecording, "--loop", "--speed", "4"]

    /// `stepctl watch` keeps going across a daemon's SIGTERM and a new daemon on the same socket (what a
    /// `systemctl restart stepd` does), and says so on standard error; `--once` ends with 69 instead.
    func testWatchFollowsTheDaemonThroughARestart() throws {
        let directory = try TemporaryDirectory()
        let first = try Daemon(arguments: replay, directory: directory)
        let watcher = try RunningCommand(Binaries.stepctl, ["watch", "--json", "--socket", first.socketPath])
        let once = try RunningCommand(Binaries.stepctl, ["watch", "--once", "--socket", first.socketPath])
        defer { watcher.stop(); once.stop() }
        XCTAssertEqual(try watcher.lines(3).count, 3)
        _ = try once.lines(1)
        XCTAssertEqual(first.terminate(), 0)
        // The daemon is gone: --once ends as before (69); the plain watcher waits.
        try pollUntil("watch --once to end", timeout: 10, every: 0.05) { !once.isRunning }
        XCTAssertEqual(once.status, 69, once.errors)
        XCTAssertTrue(once.errors.contains("closed the connection"), once.errors)
        try pollUntil("watch to say it waits for the daemon", timeout: 15, every: 0.05, detail: watcher.errors) {
            watcher.errors.contains("waiting for stepd to come back")
        }
        XCTAssertTrue(watcher.isRunning, "watch ended with the daemon: \(watcher.errors)")
        XCTAssertTrue(watcher.errors.contains("waiting for stepd to come back (--once to exit instead)"), watcher.errors)
        watcher.drain()  // the first daemon's events
        let second = try Daemon(arguments: replay, directory: directory)
        defer { second.terminate() }
        // Events from the new daemon, on the same standard output.
        let after = try watcher.lines(3, timeout: 30)
        for line in after {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertNotNil(object["class"] as? String, line)
        }
        XCTAssertTrue(watcher.errors.contains("connected to stepd again"), watcher.errors)
        XCTAssertEqual(watcher.errors.components(separatedBy: "waiting for stepd").count - 1, 1,
                       "said once, not at every retry: \(watcher.errors)")
    }

    /// `track` and `visits` take dates and --today as `history` does, in the daemon's days; an empty track
    /// says so as `position` does.
    func testTrackAndVisitsTakeDatesLikeHistory() throws {
        let daemon = try Daemon(arguments: replay + ["--no-gps"], environment: ["TZ": "Asia/Tokyo"])
        defer { daemon.terminate() }
        let socket = ["--socket", daemon.socketPath]
        // Dates near today in the daemon's zone, whatever today is: "--from 7d --to" a literal day is backwards a
        // week after the day written.
        let tokyo = TimeZone(identifier: "Asia/Tokyo")!
        let daysAgo = Timestamp.day(Date(timeIntervalSinceNow: -5 * 86_400), in: tokyo)
        let tomorrow = Timestamp.day(Date(timeIntervalSinceNow: 86_400), in: tokyo)
        for arguments in [["track", "--from", daysAgo], ["track", "--today"], ["track", "--from", "7d", "--to", tomorrow],
                          ["visits", "--from", daysAgo], ["visits", "--today"], ["track", "--today", "--gpx"]] {
            let result = try runCommand(Binaries.stepctl, arguments + socket, timeout: 30)
            XCTAssertEqual(result.status, 0, "stepctl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        XCTAssertEqual(try runCommand(Binaries.stepctl, ["track", "--today"] + socket).stdout, "no track in that range\n")
        XCTAssertEqual(try runCommand(Binaries.stepctl, ["track"] + socket).stdout, "no track yet: GPS is off (--no-gps)\n")
        XCTAssertEqual(try runCommand(Binaries.stepctl, ["visits", "--today"] + socket).stdout, "no visits yet\n")
        let wrong = try runCommand(Binaries.stepctl, ["track", "--from", "26/11/2026"] + socket)
        XCTAssertEqual(wrong.status, 64, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("--from must look like 2026-11-20, 7d, 12h, 90m or an ISO-8601 time"), wrong.stderr)
        let both = try runCommand(Binaries.stepctl, ["visits", "--today", "--from", "7d"] + socket)
        XCTAssertEqual(both.status, 64, both.stderr)
    }

    /// A socket that is there but not this user's to open (root's 0660, as the daemon makes it) is a group to
    /// join, not a daemon to start: said so, with 77.
    func testASocketNotPermittedSaysWhichGroupToJoin() throws {
        try Unprivileged.requireTools()
        let daemon = try Daemon(arguments: replay + ["--no-gps"])
        defer { daemon.terminate() }
        chmod((daemon.socketPath as NSString).deletingLastPathComponent, 0o755)
        var info = stat()
        XCTAssertEqual(stat(daemon.socketPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
        let result = try runCommand("/usr/bin/setpriv", Unprivileged.asUser(Unprivileged.nobody,
                                                                            [Binaries.stepctl, "status", "--socket", daemon.socketPath]))
        XCTAssertEqual(result.status, 77, result.stderr)
        XCTAssertTrue(result.stderr.contains("permission denied; add yourself to group stepd (usermod -aG stepd $USER) and log in again"),
                      result.stderr)
        XCTAssertFalse(result.stderr.contains("is the daemon running"), result.stderr)
        // A socket of another group (stepd.socket's SocketGroup=stepd on a board) names that group.
        guard let group = getgrnam("users") else { return }
        chown(daemon.socketPath, uid_t.max, group.pointee.gr_gid)
        let other = try runCommand("/usr/bin/setpriv", Unprivileged.asUser(Unprivileged.nobody,
                                                                           [Binaries.stepctl, "steps", "--socket", daemon.socketPath]))
        XCTAssertEqual(other.status, 77, other.stderr)
        XCTAssertTrue(other.stderr.contains("add yourself to group users (usermod -aG users $USER)"), other.stderr)
    }

    /// `--no-gps` is a choice: `stepctl status` says "GPS off", as the dashboard does.
    func testStatusSaysGPSOffWithNoGPS() throws {
        let daemon = try Daemon(arguments: replay + ["--no-gps"])
        defer { daemon.terminate() }
        let result = try runCommand(Binaries.stepctl, ["status", "--socket", daemon.socketPath])
        XCTAssertEqual(result.status, 0, result.stderr)
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("gps:") } ?? ""
        XCTAssertEqual(line, "gps:      GPS off (--no-gps)", result.stdout)
    }
}

/// A command left running, its standard output read line by line and its standard error kept in a file.
final class RunningCommand {
    private let process = Process()
    private let output = Pipe()
    private let errorPath: String
    private var buffered = Data()

    init(_ executable: String, _ arguments: [String]) throws {
        errorPath = NSTemporaryDirectory() + "stepctl-\(UUID().uuidString.prefix(8)).err"
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
    }

    var isRunning: Bool { process.isRunning }
    var status: Int32 { process.waitUntilExit(); return process.terminationStatus }
    var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The next `count` lines, waiting at most `timeout`; fails when fewer came.
    func lines(_ count: Int, timeout: TimeInterval = 20) throws -> [String] {
        var lines: [String] = []
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while lines.count < count, Date() < deadline {
            if let newline = buffered.firstIndex(of: 0x0A) {
                lines.append(String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self))
                buffered = Data(buffered[(newline + 1)...])
                continue
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            buffered.append(contentsOf: chunk[0..<n])
        }
        XCTAssertEqual(lines.count, count, "lines: \(lines); stderr: \(errors)")
        return lines
    }

    /// Throws away what it has printed so far.
    func drain() {
        buffered = Data()
        let fd = output.fileHandleForReading.fileDescriptor
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, 200) > 0 {
            var chunk = [UInt8](repeating: 0, count: 65536)
            if read(fd, &chunk, chunk.count) <= 0 { break }
        }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: errorPath)
    }
}
