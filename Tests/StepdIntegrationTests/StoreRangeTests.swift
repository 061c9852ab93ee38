import Foundation
import XCTest

/// A stored value outside its physical range, put there by sqlite3 between two runs: the daemon used to stop
/// with SIGILL (exit 132) at every start. Now the store refuses the file naming the row, leaves it as it is,
/// and the daemon counts in memory and stops with 0.
final class StoreRangeTests: XCTestCase {
    private func store(_ status: [String: Any]) -> [String: Any] { status["store"] as? [String: Any] ?? [:] }

    private func steps(_ daemon: Daemon) throws -> Int {
        try XCTUnwrap(try daemon.connect().request(["cmd": "steps"])["steps"] as? Int)
    }

    func testAValueOutOfRangeIsAStoreFaultAndTheDaemonCountsOn() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        // Each edit, with what STATUS names: the four that crashed the daemon, and texts where numbers belong.
        let cases: [(edit: String, named: String)] = [
            ("db.execute('UPDATE counter SET steps = 9223372036854775800')", "counter row 1 has steps = 9223372036854775800"),
            ("db.execute('INSERT OR REPLACE INTO minute_bin (minute, steps, distance_m) VALUES (?, 9223372036854775807, 1)', (int(now // 60) - 1,))",
             "has steps = 9223372036854775807"),
            ("db.execute('UPDATE counter SET since = 1e300')", "counter row 1 has since = 1.0e+300"),
            ("db.execute('INSERT INTO minute_bin (minute, steps, distance_m) VALUES (9223372036854775807, 5, 1)')",
             "minute_bin row 9223372036854775807 has minute = 9223372036854775807"),
            ("db.execute(\"UPDATE counter SET steps = 'many'\")", "counter row 1 has steps = 'many'"),
            ("db.execute(\"INSERT INTO walking_bout VALUES (?, ?, 'lots', 110, NULL, NULL, NULL, NULL, NULL, NULL, 'hand')\", (now - 60, now - 30))",
             "has steps = 'lots'"),
        ]
        for (index, (edit, named)) in cases.enumerated() {
            let state = directory.file("state\(index)")
            try PreparedHistory.create(state: state, directory: directory)
            try PreparedHistory.fill(state: state, edit)
            let before = try XCTUnwrap(FileManager.default.contents(atPath: state + "/stepd.sqlite"))
            let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                                                "--state-dir", state, "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                                                "--mqtt-device-id", "range\(index)"],
                                    directory: directory, socketName: "range\(index).sock")
            let failed = try daemon.waitUntil(timeout: 30, "the store fault of \(edit)") { status in
                (self.store(status)["error"] as? String ?? "").contains("holds a value outside its range")
            }
            XCTAssertEqual(store(failed)["state"] as? String, "failed", "\(failed)")
            let error = store(failed)["error"] as? String ?? ""
            XCTAssertTrue(error.contains(state + "/stepd.sqlite") && error.contains(named), "\(edit): \(error)")
            try daemon.waitUntil(timeout: 30, "steps counted") { _ in try self.steps(daemon) > 0 }
            XCTAssertEqual(daemon.terminate(), 0, "\(edit):\n\(daemon.log)")
            XCTAssertTrue(daemon.log.contains(named), daemon.log)
            XCTAssertEqual(FileManager.default.contents(atPath: state + "/stepd.sqlite"), before, "\(edit): left as it is")
        }
    }
}
