import Foundation
import StepProtocol
import XCTest

/// The count survives the daemon: no write waits more than the 2 s commit interval, so `kill -9` loses at most
/// the last two seconds' steps and SIGTERM none; history agrees with STEPS; a broken database leaves counting in memory.
final class StoreRestartTests: XCTestCase {
    /// A recording of a board lying still (gravity on z): the restarted daemon adds no steps of its own.
    private func stillRecording(in directory: TemporaryDirectory) throws -> String {
        var text = "t,x,y,z\n"
        for i in 0..<600 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        let path = directory.file("still.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private struct Step { var count: Int; var time: Date }

    private func parseStep(_ object: [String: Any]) -> Step? {
        guard object["class"] as? String == "STEP", let count = object["steps"] as? Int,
              let text = object["time"] as? String else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Step(count: count, time: $0) }
    }

    /// Steps the watcher saw, read until `count` of them arrived.
    private func watchSteps(_ client: SocketClient, until count: Int) throws -> [Step] {
        _ = try client.request(["cmd": "watch", "classes": ["STEP"]])
        var steps: [Step] = []
        while steps.count < count {
            if let step = parseStep(try client.readObject()) { steps.append(step) }
        }
        return steps
    }

    private func restartedCount(state: String, directory: TemporaryDirectory) throws -> (steps: Int, daemon: Daemon) {
        let daemon = try Daemon(arguments: ["--replay", try stillRecording(in: directory), "--state-dir", state],
                                directory: directory, socketName: "again.sock")
        let reply = try daemon.connect().request(["cmd": "steps"])
        return (try XCTUnwrap(reply["steps"] as? Int), daemon)
    }

    func testKillNineLosesAtMostTheLastTwoSecondsOfSteps() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        var losses: [Int] = []
        for round in 0..<2 {
            // Real time, as from a sensor: the commit interval is wall time.
            let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "1", "--loop",
                                                "--state-dir", state], directory: directory, socketName: "run\(round).sock")
            let watcher = try daemon.connect()
            let seen = try watchSteps(watcher, until: 12)
            // Kill right after a step, when it is least likely to be committed yet.
            kill(daemon.process.processIdentifier, SIGKILL)
            daemon.process.waitUntilExit()
            var known = seen
            while let object = try? watcher.readObject() { if let step = parseStep(object) { known.append(step) } }
            let last = try XCTUnwrap(known.last)
            // The steps the daemon had counted in the commit interval (2 s) before it died, by their own times: a
            // step is counted up to a batch (0.7 s) and the detector's delay after it, hence a second more.
            let lastSecond = known.filter { last.time.timeIntervalSince($0.time) < 3 }.count
            let (restarted, again) = try restartedCount(state: state, directory: directory)
            again.terminate()
            let lost = last.count - restarted
            print("kill -9 round \(round): had at least \(last.count) steps, restarted at \(restarted): lost \(lost) "
                  + "(steps in the last 3 s: \(lastSecond))")
            XCTAssertGreaterThanOrEqual(lost, 0, "restarted above what was counted: \(restarted) > \(last.count)")
            XCTAssertLessThanOrEqual(lost, lastSecond, "lost more than the commit interval's steps")
            losses.append(lost)
        }
        print("kill -9 losses (steps): \(losses)")
    }

    func testSigtermSavesEveryStep() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop",
                                            "--state-dir", state], directory: directory)
        let seen = try watchSteps(try daemon.connect(), until: 20)
        XCTAssertEqual(daemon.terminate(), 0)
        let line = try XCTUnwrap(daemon.log.split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") },
                                 "no stop line in the log:\n\(daemon.log)")
        let saved = try XCTUnwrap(Int(line.split(separator: " ")[2]), String(line))
        XCTAssertGreaterThanOrEqual(saved, try XCTUnwrap(seen.last).count)
        let (restarted, again) = try restartedCount(state: state, directory: directory)
        XCTAssertEqual(restarted, saved, "SIGTERM must lose nothing")

        // History agrees with STEPS: this state folder has never been reset, so every step is in it.
        let client = try again.connect()
        let steps = try client.request(["cmd": "steps"])
        let since = try XCTUnwrap(Timestamp.date(try XCTUnwrap(steps["since"] as? String)))
        // From a minute before the count began: at 4× real time a bout's first steps, counted with their
        // own earlier instants, are stamped up to a few seconds before the daemon started.
        let from = Timestamp.string(since.addingTimeInterval(-60))
        let minutes = try client.request(["cmd": "history", "from": from, "bin": "minute"])
        XCTAssertEqual(minutes["class"] as? String, "HISTORY", "\(minutes)")
        XCTAssertEqual(minutes["steps"] as? Int, restarted)
        let bins = try XCTUnwrap(minutes["bins"] as? [[String: Any]])
        XCTAssertEqual(bins.reduce(0) { $0 + ($1["steps"] as? Int ?? 0) }, restarted)
        let today = try client.request(["cmd": "history", "bin": "day"])
        if let days = today["bins"] as? [[String: Any]], days.count == 1 {
            XCTAssertEqual(days[0]["steps"] as? Int, restarted, "today's total")
        }
        // stepctl's daily table: today and the six days before, and the same total.
        let table = try runCommand(Binaries.stepctl, ["history", "--since", "7d", "--socket", again.socketPath], timeout: 30)
        XCTAssertEqual(table.status, 0, table.stderr)
        let rows = table.stdout.split(separator: "\n")
        XCTAssertEqual(rows.count, 9, table.stdout)
        XCTAssertTrue(rows.first?.hasPrefix("date") ?? false, table.stdout)
        XCTAssertEqual(rows.last?.split(separator: " ").dropFirst().first.flatMap { Int($0) }, restarted, table.stdout)
        XCTAssertEqual(again.terminate(), 0)
    }

    func testHistoryFollowsStepsWhileCounting() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "8", "--loop"],
                                directory: directory)
        _ = try watchSteps(try daemon.connect(), until: 30)
        let client = try daemon.connect()
        // Between two STEPS the count may move; history read in between must lie within them.
        let before = try XCTUnwrap(client.request(["cmd": "steps"])["steps"] as? Int)
        // Nine years back: within the ten years one request of day bins may cover.
        let nineYearsAgo = Timestamp.string(Date().addingTimeInterval(-9 * 365 * 86_400))
        let history = try client.request(["cmd": "history", "bin": "day", "from": nineYearsAgo])
        let after = try XCTUnwrap(client.request(["cmd": "steps"])["steps"] as? Int)
        let total = try XCTUnwrap(history["steps"] as? Int, "\(history)")
        XCTAssertTrue(before <= total && total <= after, "history \(total) outside STEPS \(before)...\(after)")
        let tooLong = try client.request(["cmd": "history", "bin": "minute", "from": "2000-01-01T00:00:00Z"])
        XCTAssertEqual(tooLong["message"] as? String, "minute bins cover at most 7 days per request; ask for hour or day bins")
        let century = try client.request(["cmd": "history", "bin": "day", "from": "0001-01-01T00:00:00Z", "to": "9999-12-31T00:00:00Z"])
        XCTAssertEqual(century["message"] as? String, "day bins cover at most 3660 days per request; ask in several requests")
        let backwards = try client.request(["cmd": "history", "from": "2026-11-23T10:00:00Z", "to": "2026-11-23T09:00:00Z"])
        XCTAssertEqual(backwards["message"] as? String,
                       "\"from\" (2026-11-23T10:00:00.000Z) must be before \"to\" (2026-11-23T09:00:00.000Z)")
        let error = try client.request(["cmd": "history", "bin": "week"])
        XCTAssertEqual(error["class"] as? String, "ERROR")
        XCTAssertEqual(error["message"] as? String, "field \"bin\" must be one of \"minute\", \"hour\", \"day\"")
    }

    func testCorruptDatabaseShowsInStatusAndCountingGoesOn() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: state + "/stepd.sqlite", contents: Data(repeating: 0x42, count: 4096)))
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "8", "--loop",
                                            "--state-dir", state], directory: directory)
        let client = try daemon.connect()
        let status = try client.request(["cmd": "status"])
        let store = try XCTUnwrap(status["store"] as? [String: Any], "\(status)")
        XCTAssertEqual(store["state"] as? String, "failed")
        let error = try XCTUnwrap(store["error"] as? String)
        XCTAssertTrue(error.contains(state + "/stepd.sqlite") && error.contains("not a database"), error)
        try waitForLog("file is not a database", in: { daemon.log })
        _ = try watchSteps(client, until: 10)
        let history = try daemon.connect().request(["cmd": "history"])
        XCTAssertEqual(history["class"] as? String, "ERROR")
        XCTAssertTrue(daemon.process.isRunning)
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertTrue(daemon.log.contains("could not be saved"), daemon.log)
    }
}
