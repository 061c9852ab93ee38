import Foundation
import XCTest

/// Fixes no receiver could mean, through a real gpsd (gpsfake): dated in the future or with an absurd error
/// estimate, they are rejected and counted, and the good fixes after them become the position.
final class GPSDSanityTests: XCTestCase {
    override func setUpWithError() throws {
        try GPSDFake.requireTools()
    }

    private func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// A generated NMEA log of `segments` from `start` (whole seconds), without its comment line; and the
    /// time of its last fix as POSITION writes it.
    private func log(_ segments: [String], start: Date, extra: [String] = [], directory: TemporaryDirectory,
                     name: String) throws -> (text: String, lastTime: String) {
        let (path, truth) = try NMEAWalk.generate(["--start-time", iso(start)] + extra + segments, into: directory, name: name)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let end = try XCTUnwrap((truth["segments"] as? [[String: Any]])?.last?["end"] as? String)
        return (text.split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: "\n") + "\n",
                end.replacingOccurrences(of: "Z", with: ".000Z"))
    }

    private func position(_ daemon: Daemon) throws -> [String: Any] {
        let client = try daemon.connect()
        try client.sendLine("{\"cmd\":\"position\"}")
        return try client.readObject()
    }

    private func gps(_ daemon: Daemon) throws -> [String: Any] {
        try daemon.connect().request(["cmd": "status"])["gps"] as? [String: Any] ?? [:]
    }

    func testAFutureDatedFixAndAbsurdErrorsDoNotFreezePositionAcrossReconnects() throws {
        let directory = try TemporaryDirectory()
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let good1 = try log(["walk:6"], start: now.addingTimeInterval(-300), directory: directory, name: "good1")
        // Dated 400 days ahead: accepted as the latest fix, it would freeze POSITION for good.
        let future = try log(["walk:8"], start: now.addingTimeInterval(400 * 86_400), directory: directory, name: "future")
        // A stated standard deviation of 300 km: gpsd derives an eph far beyond any real fix.
        let absurd = try log(["walk:6"], start: now.addingTimeInterval(-250), extra: ["--gst-sigma-m", "300000"],
                             directory: directory, name: "absurd")
        let good2 = try log(["walk:14"], start: now.addingTimeInterval(-200), directory: directory, name: "good2")
        let first = directory.file("first.nmea")
        try (good1.text + future.text + absurd.text + good2.text).write(toFile: first, atomically: true, encoding: .utf8)
        // The second gpsd's log, made now: made while gpsd is away, under load it took seconds, over which the
        // daemon's retry doubled (from 0.2 s), and it reconnected after the log had played.
        // gpsd comes back and first sends a future-dated fix again, then good ones: POSITION follows them.
        let future2 = try log(["walk:4"], start: now.addingTimeInterval(800 * 86_400), directory: directory, name: "future2")
        // Long enough (120 epochs at 20 sentences a second: 18 s) to be still playing when the retry reconnects.
        let good3 = try log(["walk:120"], start: now.addingTimeInterval(-160), directory: directory, name: "good3")
        let second = directory.file("second.nmea")
        try (future2.text + good3.text).write(toFile: second, atomically: true, encoding: .utf8)

        let port = GPSDFake.freePort()
        let daemon = try Daemon(arguments: ["--gpsd", "127.0.0.1:\(port)", "--gps-retry-s", "0.2"], directory: directory)
        // 5 s of log (0.05 s a sentence): longer than the daemon's retries, 0.2 s doubling, while gpsfake starts.
        var fake = try GPSDFake(log: first, port: port, cycleSeconds: 0.05, directory: directory)
        try daemon.waitUntil(timeout: 60, "the last good fix as the position") { _ in
            try self.position(daemon)["time"] as? String == good2.lastTime
        }
        var status = try gps(daemon)
        XCTAssertGreaterThanOrEqual(status["fixes_rejected"] as? Int ?? 0, 2, "\(status)")
        XCTAssertGreaterThan(status["fixes_accepted"] as? Int ?? 0, 5, "\(status)")
        XCTAssertEqual(status["state"] as? String, "fix")
        fake.stop()

        fake = try GPSDFake(log: second, port: port, cycleSeconds: 0.05, directory: directory)
        try daemon.waitUntil(timeout: 60, "a good fix after reconnecting") { _ in
            try self.position(daemon)["time"] as? String == good3.lastTime
        }
        status = try gps(daemon)
        XCTAssertGreaterThanOrEqual(status["connections"] as? Int ?? 0, 2)
        let p = try position(daemon)
        XCTAssertLessThan(p["eph_m"] as? Double ?? .infinity, 100, "\(p)")
        fake.stop()
        XCTAssertEqual(daemon.terminate(), 0)
    }
}
