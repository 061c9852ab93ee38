import Foundation
import StepProtocol
import XCTest

/// The path and the visits survive the daemon: every point added to the track and every visit go to the
/// store with the steps' batches, come back at start, and `track`/`visits` with `from`/`to` read them from
/// the database. Through a real gpsd (gpsfake) replaying a generated walk with a stay.
final class LocationHistoryTests: XCTestCase {
    override func setUpWithError() throws {
        try GPSDFake.requireTools()
    }

    /// A walk, a 2-minute stay (a visit with --visit-min-stay-s 60), and a walk away: one finished visit.
    /// Two hours ago: within the retention, which prunes what is older at start.
    private let walkStart = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 7200)

    private func walkWithStay(in directory: TemporaryDirectory) throws -> (log: String, end: String) {
        let (log, truth) = try NMEAWalk.generate(["--start-time", Timestamp.string(walkStart), "--hdop", "0.25",
                                                  "--jitter-m", "1",
                                                  "walk:150", "stay:120", "walk:150"],
                                                 into: directory, name: "stay")
        let end = try XCTUnwrap((truth["segments"] as? [[String: Any]])?.last?["end"] as? String)
        return (log, end.replacingOccurrences(of: "Z", with: ".000Z"))
    }

    private func startDaemon(gpsdPort: Int, state: String, directory: TemporaryDirectory, socket: String) throws -> Daemon {
        try Daemon(arguments: ["--gpsd", "127.0.0.1:\(gpsdPort)", "--gps-retry-s", "0.2", "--visit-min-stay-s", "60",
                               "--visit-radius-m", "30",
                               "--state-dir", state], directory: directory, socketName: socket)
    }

    /// What `track` and `visits` say, with the parts that must survive a restart.
    private struct Saved: Equatable {
        var points: Int
        var distance: Double
        var start: String?
        var end: String?
        var coordinates: [[Double]]
        var visits: [String]
    }

    private func saved(_ daemon: Daemon, range: [String: Any] = [:]) throws -> Saved {
        let client = try daemon.connect()
        let track = try client.request(range.merging(["cmd": "track", "format": "geojson"]) { $1 })
        XCTAssertEqual(track["class"] as? String, "TRACK", "\(track)")
        let document = try XCTUnwrap(track["document"] as? String)
        let feature = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])
        let coordinates = (feature["geometry"] as? [String: Any])?["coordinates"] as? [[Double]] ?? []
        let visits = try client.request(range.merging(["cmd": "visits"]) { $1 })
        XCTAssertEqual(visits["class"] as? String, "VISITS", "\(visits)")
        let list = try XCTUnwrap(visits["visits"] as? [[String: Any]])
        let described = try list.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys), as: UTF8.self) }
        return Saved(points: track["points"] as? Int ?? -1, distance: track["distance_m"] as? Double ?? -1,
                     start: track["start"] as? String, end: track["end"] as? String, coordinates: coordinates,
                     visits: described)
    }

    /// Replays the walk into a daemon; returns the wall times at which its POSITION events arrived.
    private func replay(_ log: String, end: String, into daemon: Daemon, port: Int,
                        directory: TemporaryDirectory) throws -> [Date] {
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["POSITION"]])
        // 30 ms a fix: the visit ends (a fix 100 m from the stay) seconds before the log does.
        // Held back until the daemon's retry has found gpsd (GPSDFake.play(once:)).
        let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.01, stepped: true, directory: directory)
        try fake.play(once: daemon)
        var arrivals: [Date] = []
        var last = ""
        while last != end {
            let event = try watcher.readObject()
            guard event["class"] as? String == "POSITION" else { continue }
            arrivals.append(Date())
            last = event["time"] as? String ?? ""
        }
        fake.stop()
        return arrivals
    }

    func testTrackAndVisitsAreTheSameAfterSigterm() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let (log, end) = try walkWithStay(in: directory)
        let port = GPSDFake.freePort()
        let daemon = try startDaemon(gpsdPort: port, state: state, directory: directory, socket: "first.sock")
        _ = try replay(log, end: end, into: daemon, port: port, directory: directory)
        let before = try saved(daemon)
        XCTAssertGreaterThan(before.points, 200)
        XCTAssertEqual(before.visits.count, 1, "\(before.visits)")
        XCTAssertEqual(daemon.terminate(), 0)

        // gpsd gone: the restarted daemon has only what the store kept.
        let again = try startDaemon(gpsdPort: GPSDFake.freePort(), state: state, directory: directory, socket: "again.sock")
        let restored = try saved(again)
        XCTAssertTrue(restored == before, "track and visits after SIGTERM: \(restored.points) points, \(restored.visits)")
        let status = try again.connect().request(["cmd": "status"])
        XCTAssertEqual((status["gps"] as? [String: Any])?["fixes_accepted"] as? Int, 0, "nothing came from gpsd")

        // The stored history, by range: the whole walk, and nothing before it.
        let from = Timestamp.string(walkStart.addingTimeInterval(-60)), to = Timestamp.string(walkStart.addingTimeInterval(3600))
        var stored = try saved(again, range: ["from": from, "to": to])
        XCTAssertTrue(stored == before, "read from the store: \(stored.points) points, \(stored.visits)")
        stored = try saved(again, range: ["to": from])
        XCTAssertEqual(stored.points, 0)
        XCTAssertEqual(stored.visits, [])

        // stepctl reads the same range.
        let table = try runCommand(Binaries.stepctl, ["visits", "--from", from, "--socket", again.socketPath])
        XCTAssertEqual(table.status, 0, table.stderr)
        XCTAssertEqual(table.stdout.split(separator: "\n").count, 1, table.stdout)
        let summary = try runCommand(Binaries.stepctl, ["track", "--from", from, "--to", to, "--socket", again.socketPath])
        XCTAssertTrue(summary.stdout.contains("over \(before.points) points"), summary.stdout + summary.stderr)
        let bad = try runCommand(Binaries.stepctl, ["track", "--from", "yesterday", "--socket", again.socketPath])
        XCTAssertEqual(bad.status, 64, bad.stderr)
        XCTAssertEqual(again.terminate(), 0)
    }

    func testKillNineLosesAtMostTheCommitIntervalOfFixes() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let (log, end) = try walkWithStay(in: directory)
        let port = GPSDFake.freePort()
        let daemon = try startDaemon(gpsdPort: port, state: state, directory: directory, socket: "first.sock")
        let arrivals = try replay(log, end: end, into: daemon, port: port, directory: directory)
        let before = try saved(daemon)
        // Killed right after the last fix, when it is least likely to be committed yet.
        kill(daemon.process.processIdentifier, SIGKILL)
        daemon.process.waitUntilExit()
        // What the store may lose to kill -9: the writes of its 2 s commit interval, and a little for the hop.
        let lastSecond = arrivals.filter { arrivals.last!.timeIntervalSince($0) < 2.5 }.count

        let again = try startDaemon(gpsdPort: GPSDFake.freePort(), state: state, directory: directory, socket: "again.sock")
        let after = try saved(again)
        let lost = before.points - after.points
        print("kill -9: \(before.points) track points before, \(after.points) after; \(lastSecond) fixes came in the last 2.5 s")
        XCTAssertGreaterThanOrEqual(lost, 0)
        XCTAssertLessThanOrEqual(lost, lastSecond, "lost more than the commit interval's fixes")
        XCTAssertTrue(Array(before.coordinates.prefix(after.points)) == after.coordinates, "the saved path is the path's start")
        XCTAssertEqual(after.visits, before.visits, "the visit ended well before the kill")
        XCTAssertEqual(again.terminate(), 0)
    }
}
