import Foundation
import XCTest

/// The one-daemon lock of a state directory removed under its daemon (`rm -rf`).
final class StateDirectoryRemovedTests: XCTestCase {
    private func store(_ status: [String: Any]) -> [String: Any] { status["store"] as? [String: Any] ?? [:] }

    private func steps(_ daemon: Daemon) throws -> Int {
        try XCTUnwrap(try daemon.connect().request(["cmd": "steps"])["steps"] as? Int)
    }

    /// `rm -rf` of the state directory under a walking daemon, then a second daemon on it: the second exits 75
    /// naming the first, which creates the directory again and saves every step it counted. Before, the lock
    /// file went with the directory: both ran, each moving the other's database aside every few seconds, and
    /// the first one's steps were lost.
    func testASecondDaemonOnARemovedStateDirectoryIsRefusedAndTheFirstKeepsItsSteps() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let first = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                                           "--state-dir", state], directory: directory, socketName: "first.sock")
        try first.waitUntil(timeout: 30, "steps saved") { try (self.store($0)["state"] as? String) == "ok" && self.steps(first) > 10 }
        try FileManager.default.removeItem(atPath: state)
        let second = try runCommand(Binaries.stepd, ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state,
                                                     "--socket", directory.file("second.sock")], timeout: 30)
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertTrue(second.stderr.contains("PID \(first.process.processIdentifier)"), second.stderr)
        try first.waitUntil(timeout: 30, "the store back in a directory created again") { status in
            self.store(status)["state"] as? String == "ok" && FileManager.default.fileExists(atPath: state + "/stepd.sqlite")
        }
        let counted = try steps(first)
        try first.waitUntil(timeout: 30, "more steps") { _ in try self.steps(first) > counted }
        XCTAssertEqual(first.terminate(), 0, first.log)
        let line = try XCTUnwrap(first.log.split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") }, first.log)
        XCTAssertTrue(line.contains(" saved to "), String(line))
        let saved = try XCTUnwrap(Int(line.split(separator: " ")[2]))
        XCTAssertGreaterThan(saved, counted)
        let aside = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains(".changed-") }
        XCTAssertEqual(aside, [], "nothing moved aside")
        // The claim goes with its holder: a daemon after it starts and goes on from the saved count.
        let third = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state],
                               directory: directory, socketName: "third.sock")
        XCTAssertGreaterThanOrEqual(try steps(third), saved)
        XCTAssertEqual(third.terminate(), 0)
    }
}
