import Foundation
import StepProtocol
import XCTest

/// STEPS' `today` through the real daemon: a local midnight crossed while walking (the daemon run in a zone
/// whose midnight comes a few seconds into the test), a restart that keeps the day, a start in another zone that
/// draws the day anew from the history, the MQTT steps payload and Home Assistant's "steps today", and
/// `stepctl steps`.
///
/// Why each of its three tests takes about a minute (they run as separate processes, in scripts/test's slow_first):
/// zones are whole minutes off UTC (POSIX's "GMT-hh:mm", which the daemon reads from TZ), so a midnight can only be
/// put on a minute boundary, 8-75 s away, and each test waits for one.
final class TodayTests: XCTestCase {
    private struct Step { var count: Int; var time: Date }

    private func parseStep(_ object: [String: Any]) -> Step? {
        guard object["class"] as? String == "STEP", let count = object["steps"] as? Int,
              let text = object["time"] as? String, let time = Timestamp.date(text) else { return nil }
        return Step(count: count, time: time)
    }

    /// The next UTC minute boundary at least `lead` seconds from now.
    private func nextMinute(atLeast lead: TimeInterval) -> Date {
        let now = Date().timeIntervalSince1970
        return Date(timeIntervalSince1970: ((now + lead) / 60).rounded(.up) * 60)
    }

    /// A TZ value whose local midnight is at `midnight`, in POSIX's form as the C library reads it ("GMT-hh:mm" is
    /// hh:mm east of Greenwich; the daemon names it "GMT+hhmm").
    private func zone(withMidnightAt midnight: Date) -> String {
        let secondOfDay = Int(midnight.timeIntervalSince1970.rounded()) % 86_400
        // Local time = UTC + offset; midnight at that UTC second of day means offset = -secondOfDay (mod a day).
        let offset = secondOfDay <= 43_200 ? -secondOfDay : 86_400 - secondOfDay
        let magnitude = abs(offset) / 60
        return String(format: "GMT%@%02d:%02d", offset < 0 ? "+" : "-", magnitude / 60, magnitude % 60)
    }

    private func today(_ reply: [String: Any]) throws -> [String: Any] {
        try XCTUnwrap(reply["today"] as? [String: Any], "no today in \(reply)")
    }

    /// A walk in progress at local midnight: the steps before it stay with yesterday, today counts from the first
    /// step after it, the count since the reset goes on; PEDOMETER and the retained MQTT steps carry the new day.
    func testMidnightCrossedWhileWalkingStartsTodayAtTheFirstStepAfterIt() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        let midnight = nextMinute(atLeast: 15)
        let tz = zone(withMidnightAt: midnight)
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "2", "--loop", "--no-gps",
                                            "--state-dir", directory.file("state"),
                                            "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)", "--mqtt-device-id", "today",
                                            "--mqtt-homeassistant"],
                                directory: directory, environment: ["TZ": tz])
        defer { daemon.terminate() }
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["STEP", "PEDOMETER"]])

        // Before midnight: yesterday's `today`, from the midnight a day earlier.
        let before = try daemon.waitForSteps("steps before midnight") { ($0["today"] as? [String: Any])?["steps"] as? Int ?? 0 > 0 }
        XCTAssertLessThan(Date(), midnight, "the walk began too late to be seen before midnight (\(tz))")
        let yesterday = try today(before)
        XCTAssertEqual((yesterday["since"] as? String).flatMap(Timestamp.date), midnight.addingTimeInterval(-86_400), "\(yesterday)")
        XCTAssertTrue((yesterday["since"] as? String)?.contains("T00:00:00") == true, "\(yesterday)")
        XCTAssertNotNil(yesterday["active_min"] as? Int, "\(yesterday)")

        // Watch until steps have come for 5 s after midnight.
        var lastBefore: Step?
        var pedometerAfter: [String: Any]?
        while true {
            let object = try watcher.readObject()
            if let step = parseStep(object) {
                if step.time < midnight { lastBefore = step } else if step.time > midnight.addingTimeInterval(5) { break }
            } else if object["class"] as? String == "PEDOMETER", let day = object["today"] as? [String: Any],
                      (day["since"] as? String).flatMap(Timestamp.date) == midnight {
                pedometerAfter = day
            }
        }
        let reply = try daemon.connect().request(["cmd": "steps"])
        let day = try today(reply)
        let total = try XCTUnwrap(reply["steps"] as? Int)
        let before0 = try XCTUnwrap(lastBefore, "no step seen before midnight").count
        XCTAssertEqual((day["since"] as? String).flatMap(Timestamp.date), midnight, "\(day)")
        XCTAssertEqual(day["steps"] as? Int, total - before0, "today is not the steps after midnight: \(reply)")
        XCTAssertGreaterThan(total - before0, 0)
        XCTAssertGreaterThan(before0, 0)
        XCTAssertNotNil(pedometerAfter, "no PEDOMETER of the new day")
        print("TodayTests: midnight at \(Timestamp.string(midnight)) (TZ=\(tz)): \(before0) steps before it, "
              + "\(total) since the start, today \(day)")

        // MQTT: the retained steps carry today; Home Assistant's "steps today" is total_increasing on today.steps.
        var retained: [String: String] = [:]
        try pollUntil("the retained steps of the new day", timeout: 10, detail: "\(retained)") {
            retained = try retainedMessages(broker: broker, topics: ["stepd/today/steps", "homeassistant/#"])
            guard let payload = retained["stepd/today/steps"],
                  let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
                  let day = object["today"] as? [String: Any] else { return false }
            return (day["since"] as? String).flatMap(Timestamp.date) == midnight
        }
        let configText = try XCTUnwrap(retained["homeassistant/sensor/stepd_today/steps_today/config"], "\(retained.keys)")
        let config = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(configText.utf8)) as? [String: Any])
        XCTAssertEqual(config["state_class"] as? String, "total_increasing")
        XCTAssertEqual(config["state_topic"] as? String, "stepd/today/steps")
        XCTAssertTrue((config["value_template"] as? String)?.contains("value_json.today.steps") == true, configText)
        XCTAssertNotNil(retained["homeassistant/sensor/stepd_today/steps/config"], "the since-reset sensor is gone")
        print("TodayTests: steps_today discovery: \(configText)")
    }

    /// Midnight with no sample coming (a replay that has ended: no batch to notice the day): a PEDOMETER of the
    /// new day all the same, from the engine's midnight timer, and STEPS with it.
    func testMidnightWithoutSamplesSendsAPedometerOfTheNewDay() throws {
        let directory = try TemporaryDirectory()
        let midnight = nextMinute(atLeast: 8)
        let still = directory.file("still.csv")
        var text = "t,x,y,z\n"
        for i in 0..<300 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        try text.write(toFile: still, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--replay", still, "--no-gps", "--state-dir", directory.file("state")],
                                directory: directory, environment: ["TZ": zone(withMidnightAt: midnight)])
        defer { daemon.terminate() }
        try daemon.waitUntil("the replay to end") { ($0["source"] as? [String: Any])?["state"] as? String == "finished" }
        let watcher = try SocketClient(path: daemon.socketPath, receiveTimeout: 90)
        _ = try watcher.request(["cmd": "watch", "classes": ["PEDOMETER"]])
        XCTAssertLessThan(Date(), midnight)
        var pedometer: [String: Any] = [:]
        repeat { pedometer = try watcher.readObject() } while pedometer["class"] as? String != "PEDOMETER"
        let day = try today(pedometer)
        XCTAssertEqual((day["since"] as? String).flatMap(Timestamp.date), midnight, "\(pedometer)")
        XCTAssertEqual(day["steps"] as? Int, 0)
        XCTAssertGreaterThanOrEqual(Date(), midnight)
        XCTAssertEqual((try today(try daemon.connect().request(["cmd": "steps"]))["since"] as? String).flatMap(Timestamp.date), midnight)
    }

    /// A restart keeps today's figures (rebuilt from the minute bins); a start in a zone whose midnight falls
    /// within the saved walk counts only the steps after it; `stepctl steps` shows today first.
    func testRestartKeepsTodayAndAnotherZoneRedrawsTheDay() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        // A zone whose midnight was 6 hours ago: the whole test is in one of its days.
        let zoneA = zone(withMidnightAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 6 * 3600))
        let boundary = nextMinute(atLeast: 8)
        let walking = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "2", "--loop", "--no-gps",
                                             "--state-dir", state], directory: directory,
                                 environment: ["TZ": zoneA], socketName: "walk.sock")
        let watcher = try walking.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["STEP"]])
        var lastBefore: Step?
        var after = 0
        while after < 10 {
            guard let step = parseStep(try watcher.readObject()) else { continue }
            if step.time < boundary { lastBefore = step } else { after += 1 }
        }
        XCTAssertEqual(walking.terminate(), 0)
        let beforeBoundary = try XCTUnwrap(lastBefore, "no step before \(Timestamp.string(boundary))").count

        let still = directory.file("still.csv")
        var text = "t,x,y,z\n"
        for i in 0..<600 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        try text.write(toFile: still, atomically: true, encoding: .utf8)
        func restarted(_ tz: String, _ name: String) throws -> (reply: [String: Any], stepctl: CommandResult) {
            let daemon = try Daemon(arguments: ["--replay", still, "--no-gps", "--state-dir", state], directory: directory,
                                    environment: ["TZ": tz], socketName: name)
            defer { daemon.terminate() }
            let reply = try daemon.connect().request(["cmd": "steps"])
            let stepctl = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "steps"], timeout: 30)
            XCTAssertEqual(stepctl.status, 0, stepctl.stderr)
            // --json passes the daemon's STEPS through, `today` with it.
            let json = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "--json", "steps"], timeout: 30)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            XCTAssertEqual((object?["today"] as? [String: Any])?["steps"] as? Int, (reply["today"] as? [String: Any])?["steps"] as? Int,
                           json.stdout)
            return (reply, stepctl)
        }

        // The same zone: the whole walk was today.
        let (same, sameOutput) = try restarted(zoneA, "same.sock")
        let total = try XCTUnwrap(same["steps"] as? Int)
        XCTAssertGreaterThan(total, beforeBoundary)
        XCTAssertEqual(try today(same)["steps"] as? Int, total, "today after a restart: \(same)")
        XCTAssertEqual((try today(same)["distance_m"] as? Double) ?? -1, same["distance_m"] as? Double ?? -2, accuracy: 0.05)
        let lines = sameOutput.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.first?.hasPrefix("today:       \(total) steps, ") == true, sameOutput.stdout)
        XCTAssertTrue(lines.dropFirst().first?.hasPrefix("since reset: \(total) steps since ") == true, sameOutput.stdout)
        print("TodayTests: stepctl steps after a restart:\n\(sameOutput.stdout)")

        // Another zone, whose midnight is the minute boundary the walk crossed: today is the steps after it.
        let zoneB = zone(withMidnightAt: boundary)
        let (other, otherOutput) = try restarted(zoneB, "other.sock")
        XCTAssertEqual(other["steps"] as? Int, total, "the count since the reset does not follow the zone")
        let day = try today(other)
        XCTAssertEqual(day["steps"] as? Int, total - beforeBoundary, "today in \(zoneB): \(other)")
        XCTAssertEqual((day["since"] as? String).flatMap(Timestamp.date), boundary, "\(day)")
        XCTAssertTrue(otherOutput.stdout.hasPrefix("today:       \(total - beforeBoundary) steps, "), otherOutput.stdout)
        print("TodayTests: in \(zoneB) (midnight \(Timestamp.string(boundary))):\n\(otherOutput.stdout)")
    }
}
