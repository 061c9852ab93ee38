import Foundation
import XCTest

/// What the real daemon writes to stderr: debug lines a developer wants, silence at info while it simply
/// counts, and journal-style lines (`<N>` priorities, no timestamp) under systemd.
final class DaemonLogTests: XCTestCase {
    private func steps(_ daemon: Daemon) throws -> Int {
        try daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0
    }

    func testDebugLevelTellsTheSourceChoiceAndStoreCommitsInJournalStyle() throws {
        // Under systemd (INVOCATION_ID set) a stderr that is not a terminal is the journal's.
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--log-level", "debug"],
                                environment: ["INVOCATION_ID": "0123456789abcdef", "JOURNAL_STREAM": ""])
        try daemon.waitUntil(timeout: 60, "steps committed to the store") { status in
            (status["store"] as? [String: Any])?["last_commit"] != nil && daemon.log.contains("store: committed")
        }
        let lines = daemon.log.split(separator: "\n").filter { $0.hasPrefix("<") }
        XCTAssertTrue(lines.contains { $0.hasPrefix("<7>stepd: source: the recording \(Binaries.bundledRecording) (--replay)") }, daemon.log)
        XCTAssertTrue(lines.contains { $0.hasPrefix("<7>stepd: source: --replay without --device") },
                      "the IIO side of the choice: \(daemon.log)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("<7>stepd.store: store: committed ") }, daemon.log)
        let stamped = try NSRegularExpression(pattern: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"#, options: .anchorsMatchLines)
        XCTAssertNil(stamped.firstMatch(in: daemon.log, range: NSRange(daemon.log.startIndex..., in: daemon.log)),
                     "the journal stamps lines itself: \(daemon.log)")
    }

    func testInfoLevelWritesNothingWhileCountingAndStampsLinesOnATerminal() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"],
                                environment: ["INVOCATION_ID": "", "JOURNAL_STREAM": ""])
        try daemon.waitUntil(timeout: 60, "counting") { ($0["samples_in"] as? Int ?? 0) > 0 }
        let first = try steps(daemon)
        try daemon.waitUntil(timeout: 60, "a first step") { _ in try self.steps(daemon) > first }
        let settled = daemon.log
        let before = try steps(daemon)
        try daemon.waitUntil(timeout: 90, "30 more steps") { _ in try self.steps(daemon) >= before + 30 }
        XCTAssertEqual(daemon.log, settled, "steady counting logged at info")
        for line in settled.split(separator: "\n") where !line.hasPrefix("stepd: ") {
            XCTAssertNotNil(line.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [a-z]+ stepd"#, options: .regularExpression),
                            "a log line on a terminal carries its time and level: \(line)")
        }
    }
}
