import Foundation
import StepProtocol
import XCTest

/// STEPS' `today` through the real daemon and its store: a restart that keeps the day, a start in another zone
/// that draws the day anew from the history, and `stepctl steps`. A midnight itself (crossed while walking, or
/// with no sample coming) is the engine's timer and clock: ClockDrivenTests moves a manual clock across it.
///
/// Why the test takes about a minute: zones are whole minutes off UTC (POSIX's "GMT-hh:mm", which the daemon reads
/// from TZ), so the walk must cross a minute boundary, 8-68 s away, for another zone's midnight to fall within it.
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
