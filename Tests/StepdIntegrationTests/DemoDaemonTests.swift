import Foundation
import XCTest

/// `--demo` (and `demo = true` in stepd.conf): the bundled recording plays, STATUS says it is a demo, and its
/// steps never reach the history in the state directory.
final class DemoDaemonTests: XCTestCase {
    func testADemoSaysSoAndNeverWritesTheSystemsHistory() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let config = directory.file("stepd.conf")
        try "demo = true\nspeed = 10\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config, "--state-dir", state], directory: directory)
        let client = try daemon.connect()
        try daemon.waitUntil(timeout: 30, "demo steps") { _ in (try client.request(["cmd": "steps"])["steps"] as? Int ?? 0) > 5 }
        let status = try client.request(["cmd": "status"])
        let source = try XCTUnwrap(status["source"] as? [String: Any])
        XCTAssertEqual(source["demo"] as? Bool, true)
        XCTAssertEqual(source["kind"] as? String, "demo")
        XCTAssertTrue((source["description"] as? String ?? "").contains("walk-inhand.csv.gz"), "\(source)")
        let store = try XCTUnwrap((status["store"] as? [String: Any])?["path"] as? String)
        XCTAssertFalse(store.hasPrefix(state), "a demo's history is its own: \(store)")
        let throwaway = (store as NSString).deletingLastPathComponent
        XCTAssertTrue(FileManager.default.fileExists(atPath: store))

        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: throwaway), "removed at exit")
        XCTAssertFalse(FileManager.default.fileExists(atPath: state + "/stepd.sqlite"), "the system's history is untouched")
    }

    /// A second `--demo` on the socket of a running one says why it cannot start, and only that: no
    /// "stopped ... saved" nor "demo over" of a daemon that never ran (75, EX_TEMPFAIL).
    func testASecondDemoSaysOnlyThatTheSocketIsTaken() throws {
        let first = try Daemon(arguments: ["--demo"])
        defer { first.terminate() }
        let second = try runCommand(Binaries.stepd, ["--demo", "--socket", first.socketPath], timeout: 30)
        XCTAssertEqual(second.status, 75, second.stderr)
        let output = second.stdout + second.stderr
        XCTAssertTrue(output.contains("another daemon is already listening on \(first.socketPath)"), output)
        XCTAssertFalse(output.contains("stopped"), output)
        XCTAssertFalse(output.contains("demo over"), output)
        XCTAssertEqual(try first.connect().request(["cmd": "status"])["class"] as? String, "STATUS", "the first one serves on")
    }

    func testADaemonWithoutAnAccelerometerNorDemoCountsNothing() throws {
        // What the installed service does on a board whose sensor is not there (yet): no invented steps.
        let daemon = try Daemon(arguments: ["--iio-uri", "local:", "--device", "no-such-accelerometer"])
        try daemon.waitUntil(timeout: 20, "waiting") { ($0["source"] as? [String: Any])?["state"] as? String == "waiting" }
        let client = try daemon.connect()
        XCTAssertEqual(try client.request(["cmd": "steps"])["steps"] as? Int, 0)
        let source = try client.request(["cmd": "status"])["source"] as? [String: Any] ?? [:]
        XCTAssertEqual(source["demo"] as? Bool, false)
        XCTAssertEqual(source["kind"] as? String, "iio")
        XCTAssertEqual(daemon.terminate(), 0)
    }

    func testDemoAndReplayTogetherAreRefused() throws {
        let result = try runCommand(Binaries.stepd, ["--demo", "--replay", Binaries.bundledRecording], timeout: 30)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("--demo plays the bundled recording and --replay another one"), result.stderr)
    }
}
