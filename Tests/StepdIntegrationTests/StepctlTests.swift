import Foundation
import StepProtocol
import XCTest

/// stepctl as people type it (issue 13), against the real daemon.
final class StepctlTests: XCTestCase {
    private var daemon: Daemon!

    override func setUpWithError() throws {
        // The daemon keeps Tokyo's days; stepctl below runs in Los Angeles, 17 hours behind.
        daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--speed", "4"],
                            environment: ["TZ": "Asia/Tokyo"])
    }

    override func tearDown() {
        daemon?.terminate()
        daemon = nil
    }

    private func stepctl(_ arguments: [String]) throws -> CommandResult {
        try runCommand(Binaries.stepctl, arguments, environment: ["TZ": "America/Los_Angeles"], timeout: 30)
    }

    private func json(_ result: CommandResult) throws -> [String: Any] {
        XCTAssertEqual(result.status, 0, result.stderr)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
    }

    func testGlobalOptionsGoBeforeOrAfterTheCommand() throws {
        let before = try stepctl(["--socket", daemon.socketPath, "status"])
        XCTAssertEqual(before.status, 0, before.stderr)
        XCTAssert(before.stdout.contains("source:"), before.stdout)
        XCTAssertEqual(try json(try stepctl(["--json", "--socket", daemon.socketPath, "steps"]))["class"] as? String, "STEPS")
        XCTAssertEqual(try json(try stepctl(["--socket=\(daemon.socketPath)", "steps", "--json"]))["class"] as? String, "STEPS")
        XCTAssertEqual(try json(try stepctl(["steps", "--json", "--socket", daemon.socketPath]))["class"] as? String, "STEPS")
    }

    func testTodayAndDatesAreTheDaemonsDays() throws {
        let status = try json(try stepctl(["status", "--json", "--socket", daemon.socketPath]))
        XCTAssertEqual(status["time_zone"] as? String, "Asia/Tokyo")
        XCTAssertEqual(status["utc_offset_s"] as? Int, 9 * 3600)
        let today = try json(try stepctl(["history", "--today", "--json", "--socket", daemon.socketPath]))
        XCTAssert((today["from"] as? String ?? "").hasSuffix("T00:00:00.000+09:00"), "\(today["from"] ?? "-")")
        let week = try json(try stepctl(["history", "--since", "7d", "--json", "--socket", daemon.socketPath]))
        XCTAssert((week["from"] as? String ?? "").hasSuffix("T00:00:00.000+09:00"), "\(week["from"] ?? "-")")
        // A date three days back, in the daemon's zone: a literal one would leave the hour bins' 92 days one day.
        let day = Timestamp.day(Date(timeIntervalSinceNow: -3 * 86_400), in: TimeZone(identifier: "Asia/Tokyo")!)
        let date = try json(try stepctl(["history", "--since", day, "--json", "--socket", daemon.socketPath]))
        XCTAssertEqual(date["from"] as? String, "\(day)T00:00:00.000+09:00")
        let summary = try json(try stepctl(["summary", "--json", "--socket", daemon.socketPath]))
        XCTAssert((summary["since"] as? String ?? "").hasSuffix("T00:00:00.000+09:00"), "\(summary)")
    }

    func testJSONLinesStartWithTheirClassAsGpsdsDo() throws {
        // The daemon's replies as stepctl prints them, and stepctl's own summary: class first, then the fields.
        for (command, prefix) in [("status", #"{"class":"STATUS","release":"#), ("steps", #"{"class":"STEPS","steps":"#),
                                  ("position", #"{"class":"POSITION","#), ("summary", #"{"class":"SUMMARY","steps":"#)] {
            let output = try stepctl([command, "--json", "--socket", daemon.socketPath])
            XCTAssertTrue(output.stdout.hasPrefix(prefix), "\(command): \(output.stdout) \(output.stderr)")
        }
    }

    func testGraphRefusesANonTerminalAndStreamsMotionAsJSON() throws {
        let refused = try stepctl(["graph", "--socket", daemon.socketPath])
        XCTAssertEqual(refused.status, 64)
        XCTAssert(refused.stderr.contains("not one") && refused.stderr.contains("--json"), refused.stderr)
        let lines = try firstLines(of: ["graph", "--json", "--socket", daemon.socketPath], count: 5)
        for line in lines {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(object["class"] as? String, "MOTION", line)
        }
    }

    func testWatchWithoutClassesShowsEverythingButMotion() throws {
        let lines = try firstLines(of: ["watch", "--json", "--socket", daemon.socketPath], count: 20)
        let classes = Set(lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["class"] as? String })
        XCTAssert(classes.contains("STEP"), "\(classes)")
        XCTAssertFalse(classes.contains("MOTION"), "\(classes)")
        // The daemon's own default is the same.
        let ack = try daemon.connect().request(["cmd": "watch"])
        XCTAssertEqual(ack["classes"] as? [String], ["ACTIVITY", "BOUT", "PEDOMETER", "POSITION", "STEP", "VISIT"])
    }

    func testExitStatusesFollowTheTable() throws {
        let usage = try stepctl(["history", "--bin", "week", "--socket", daemon.socketPath])
        XCTAssertEqual(usage.status, 64, usage.stderr)
        // The daemon's ERROR (more than 7 days of minute bins): 1, with the daemon's words.
        let refused = try stepctl(["history", "--since", "30d", "--bin", "minute", "--socket", daemon.socketPath])
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssert(refused.stderr.contains("stepd:"), refused.stderr)
        try Unprivileged.requireTools()
        Unprivileged.openSocket(daemon)
        let reset = try runCommand("/usr/bin/setpriv", Unprivileged.asUser(Unprivileged.nobody, [Binaries.stepctl, "reset", "--socket", daemon.socketPath]))
        XCTAssertEqual(reset.status, 77, reset.stderr)
        XCTAssert(reset.stderr.contains("not permitted"), reset.stderr)
    }

    /// Every command that prints, with its standard output a pipe whose reader has gone before the first line:
    /// each ends at once, quietly, with 0 (stepctl(1)): no trap in FileHandle's write, no `watch` writing into
    /// the void for ever.
    func testAClosedPipeEndsEveryPrintingCommandQuietly() throws {
        let socket = ["--socket", daemon.socketPath]
        let commands: [[String]] = [
            ["status"], ["steps"], ["steps", "--json"], ["history", "--since", "2d"], ["history", "--json"], ["summary"],
            ["summary", "--json"], ["position"], ["visits"], ["track"], ["track", "--gpx"], ["track", "--geojson"],
            ["watch"], ["watch", "--json"], ["watch", "--classes", "MOTION"], ["graph", "--json"],
        ]
        for command in commands {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Binaries.stepctl)
            process.arguments = command + socket
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try output.fileHandleForReading.close()   // nobody reads: the first write is an EPIPE
            try process.run()
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning && Date() < deadline { usleep(10_000) }  // poll interval of a wait for a state, not a fixed wait
            let ended = !process.isRunning
            if !ended { process.terminate() }
            process.waitUntilExit()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let name = command.joined(separator: " ")
            XCTAssertTrue(ended, "stepctl \(name) went on after its reader had gone")
            XCTAssertEqual(process.terminationReason, .exit, "stepctl \(name) died by signal \(process.terminationStatus)")
            XCTAssertEqual(process.terminationStatus, 0, "stepctl \(name): \(stderr)")
            XCTAssertEqual(stderr, "", "stepctl \(name) is quiet")
        }
    }

    /// The shell's way: `stepctl watch | head -n 2` ends once head has its two lines; stepctl's own status is 0.
    func testWatchIntoHeadEnds() throws {
        // timeout(1): a stepctl that never ends is killed (137), so the test ends either way.
        let script = "set -o pipefail; timeout -s KILL 30 '\(Binaries.stepctl)' watch --socket '\(daemon.socketPath)' | head -n 2; "
            + "echo \"status ${PIPESTATUS[0]}\""
        let started = Date()
        let result = try runCommand("/bin/bash", ["-c", script], timeout: 60)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, result.stdout + result.stderr)
        XCTAssertEqual(lines.last, "status 0", result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertLessThan(Date().timeIntervalSince(started), 25, "it ended by itself, not by the timeout")
    }

    /// A standard output that cannot be written for another reason (a full disk: /dev/full) is said, with EX_IOERR.
    func testAFullDiskIsAnIOErrorSaidOnStandardError() throws {
        let result = try runCommand("/bin/sh", ["-c", "'\(Binaries.stepctl)' status --socket '\(daemon.socketPath)' > /dev/full"])
        XCTAssertEqual(result.status, 74, result.stderr)
        XCTAssertEqual(result.stderr, "stepctl: cannot write to standard output: No space left on device\n")
    }

    /// A 100 KB argument is refused in one short line (64), not repeated whole; a socket path beyond sun_path
    /// says its limit.
    func testOverlongArgumentsAreRefusedInOneLine() throws {
        let long = String(repeating: "x", count: 100_000)
        for arguments in [["--socket", long, "status"], ["graph", "--rate", long], ["history", "--since=" + long]] {
            let result = try stepctl(arguments)
            XCTAssertEqual(result.status, 64, String(result.stderr.prefix(200)))
            XCTAssertTrue(result.stderr.contains("expected at most 4095 bytes"), String(result.stderr.prefix(200)))
            XCTAssertLessThan(result.stderr.utf8.count, 300)
        }
        let result = try stepctl(["--socket", "/tmp/" + String(repeating: "s", count: 200), "status"])
        XCTAssertEqual(result.status, 69, result.stderr)
        XCTAssertTrue(result.stderr.contains("the path is 205 bytes; a Unix socket's address holds at most 107"), result.stderr)
        XCTAssertLessThan(result.stderr.utf8.count, 300)
    }

    /// Runs stepctl until it has printed `count` lines, then stops it.
    private func firstLines(of arguments: [String], count: Int, timeout: TimeInterval = 30) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.stepctl)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        var text = Data()
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while text.filter({ $0 == 0x0A }).count < count, Date() < deadline, process.isRunning {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            text.append(contentsOf: chunk[0..<n])
        }
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertGreaterThanOrEqual(lines.count, count, "stepctl \(arguments.joined(separator: " ")) printed: \(lines)")
        return Array(lines.prefix(count))
    }
}
