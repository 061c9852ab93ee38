import Foundation
import XCTest

/// A replayed recording with impossible values or a broken clock: nothing traps, nothing freezes, and the
/// count is the one the good samples give.
final class ReplaySanityTests: XCTestCase {
    private func analyze(_ file: String) throws -> Int {
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", file])
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return try XCTUnwrap(object["steps"] as? Int)
    }

    /// Replays `file` to its end; returns STEPS, STATUS and the daemon's log.
    private func replay(_ file: String, speed: Int = 40) throws -> (steps: [String: Any], status: [String: Any], log: String) {
        let daemon = try Daemon(arguments: ["--replay", file, "--speed", "\(speed)"])
        try daemon.waitUntil(timeout: 120, "the replay to finish") { status in
            (status["source"] as? [String: Any])?["state"] as? String == "finished"
        }
        let client = try daemon.connect()
        let steps = try client.request(["cmd": "steps"])
        let status = try client.request(["cmd": "status"])
        XCTAssertEqual(daemon.terminate(), 0, "a clean exit: \(daemon.log)")
        return (steps, status, daemon.log)
    }

    func testImpossibleSamplesInjectedIntoARealRecordingAreDroppedAndCounted() throws {
        let directory = try TemporaryDirectory()
        let clean = try bundledWalkLines()
        var crafted: [String] = []
        var injected = 0
        for (index, line) in clean.enumerated() {
            crafted.append(line)
            guard index > 0, index % 1000 == 0, let t = Double(line.split(separator: ",")[0]) else { continue }
            // Between two real samples, so the good ones are untouched: one 1e300 (which froze counting for the
            // rest of a recording), one NaN, one 60 g, and a run of 1e308 on every axis.
            let at = { (k: Int) in String(format: "%.6f", t + 0.0001 * Double(k)) }
            crafted += ["\(at(1)),1e300,0,9.8", "\(at(2)),nan,0,9.8", "\(at(3)),0,0,\(60 * 9.80665)"]
            crafted += (4..<24).map { "\(at($0)),1e308,1e308,1e308" }
            injected += 23
        }
        let path = directory.file("crafted.csv")
        try crafted.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let cleanCount = try analyze(Binaries.bundledRecording)
        XCTAssertGreaterThan(cleanCount, 150)
        XCTAssertGreaterThan(injected, 200)

        let (steps, status, _) = try replay(path)
        XCTAssertEqual(steps["steps"] as? Int, cleanCount, "the count equals the clean recording's")
        XCTAssertEqual(status["class"] as? String, "STATUS")
        XCTAssertEqual((status["source"] as? [String: Any])?["samples_rejected"] as? Int, injected)
        XCTAssertEqual(try analyze(path), cleanCount, "stepd analyze drops them alike")
    }

    func testAllImpossibleSamplesLeaveStatusAStatusWithNothingCounted() throws {
        let directory = try TemporaryDirectory()
        let lines = ["t,x,y,z"] + (0..<600).map { String(format: "%.2f,1e308,1e308,1e308", Double($0) / 100) }
        let path = directory.file("huge.csv")
        try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (steps, status, _) = try replay(path, speed: 4)
        XCTAssertEqual(status["class"] as? String, "STATUS", "\(status)")
        XCTAssertEqual((status["source"] as? [String: Any])?["samples_rejected"] as? Int, 600)
        XCTAssertNil(status["gravity"])
        XCTAssertEqual(steps["class"] as? String, "STEPS")
        XCTAssertEqual(steps["steps"] as? Int, 0)
    }

    /// A jump of 10^11 s (3,170 years, within the 10^12 s a reader takes: RecordingReaderTests): a gap.
    func testATimestampJumpOfThreeMillenniaIsAGapNotATrap() throws {
        let directory = try TemporaryDirectory()
        var lines = try bundledWalkLines()
        let middle = lines.count / 2
        for i in middle..<lines.count {
            var fields = lines[i].split(separator: ",").map(String.init)
            fields[0] = String(format: "%.3f", Double(fields[0])! + 1e11)
            lines[i] = fields.joined(separator: ",")
        }
        // And one jump back, to a time before the first.
        lines.insert("-5000,0,0,9.8", at: middle + 100)
        let path = directory.file("jump.csv")
        try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let offline = try analyze(path)
        let (steps, _, log) = try replay(path)
        XCTAssertEqual(steps["steps"] as? Int, offline)
        XCTAssertGreaterThan(offline, 50)
        XCTAssertEqual(log.components(separatedBy: "treated as a gap").count - 1, 1, "logged once:\n\(log)")
    }

    /// A recording whose clock jumps a day forward and then an hour back, eight times: every step is stamped
    /// within the replay's own minutes, and today's count equals the count. A step confirmed after a jump is not
    /// stamped by the jumped clock, which would put it a day (less an hour) in the past, in yesterday's bins, or
    /// an hour in the future, and `today` short of `steps`.
    func testADayForwardThenAnHourBackStampsNoStepAwayFromTheReplay() throws {
        let directory = try TemporaryDirectory()
        var lines = try bundledWalkLines()
        var offset = 0.0
        for i in 1..<lines.count {
            if i >= 1500, i % 1000 == 500 { offset += 86_400 }
            if i >= 2000, i % 1000 == 0 { offset -= 3_600 }
            var fields = lines[i].split(separator: ",").map(String.init)
            fields[0] = String(format: "%.4f", Double(fields[0])! + offset)
            lines[i] = fields.joined(separator: ",")
        }
        let path = directory.file("jumps.csv")
        try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let started = Date()
        let daemon = try Daemon(arguments: ["--replay", path, "--speed", "10"])
        try daemon.waitUntil(timeout: 120, "the replay to finish") { status in
            (status["source"] as? [String: Any])?["state"] as? String == "finished"
        }
        let client = try daemon.connect()
        let steps = try client.request(["cmd": "steps"])
        let count = try XCTUnwrap(steps["steps"] as? Int)
        XCTAssertGreaterThan(count, 100)
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let history = try client.request(["cmd": "history", "bin": "minute",
                                          "from": format.string(from: started.addingTimeInterval(-3 * 86_400)),
                                          "to": format.string(from: Date().addingTimeInterval(3 * 3_600))])
        let bins = try XCTUnwrap(history["bins"] as? [[String: Any]], "\(history)")
        XCTAssertEqual(history["steps"] as? Int, count, "\(history)")
        for bin in bins {
            let start = try XCTUnwrap(format.date(from: bin["start"] as? String ?? ""))
            XCTAssertGreaterThan(start, started.addingTimeInterval(-120), "a step stamped before the replay: \(bin)")
            XCTAssertLessThan(start, Date().addingTimeInterval(60), "a step stamped in the future: \(bin)")
        }
        let sinceMidnight = Calendar.current.startOfDay(for: Date()) <= started
        if sinceMidnight {
            XCTAssertEqual((steps["today"] as? [String: Any])?["steps"] as? Int, count, "\(steps)")
        }
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
    }

    func testCadenceIsZeroAndPaceAbsentOnceAReplayEnds() throws {
        // The bundled walk ends while walking: the last figures must not stay frozen as if it went on.
        let (steps, _, _) = try replay(Binaries.bundledRecording)
        XCTAssertGreaterThan(steps["steps"] as? Int ?? 0, 150)
        XCTAssertEqual(steps["cadence_spm"] as? Double, 0)
        XCTAssertEqual(steps["current_cadence_spm"] as? Double, 0)
        XCTAssertNil(steps["current_pace_s_per_m"], "\(steps)")
        XCTAssertEqual(steps["activity"] as? String, "stationary")
    }

    /// A looped recording of gaps only (a sample an hour): each gap is due at once, and the replay once handed
    /// the engine 200,000 samples a second, queued without bound (RSS 330 MB after 15 s). Now at most 40
    /// batches a second: the daemon's memory stays flat.
    func testALoopedRecordingOfGapsOnlyDoesNotFloodThePipeline() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gaps.csv")
        try "t,x,y,z\n0,0,0,9.8\n3600,0,0,9.8\n7200,0,0,9.8\n".write(toFile: path, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--replay", path, "--loop", "--no-gps"])
        func rssMB() throws -> Double {
            let status = try String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/status", encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return Double(line.split(separator: " ")[1])! / 1024
        }
        try pollUntil("the replay to play", timeout: 20, every: 0.1, detail: daemon.log) {
            (try daemon.connect().request(["cmd": "status"])["samples_in"] as? Int ?? 0) > 0
        }
        let before = try rssMB()
        // The behaviour is a rate over real time: 6 s of the loop's pace, the window the bounds below are for.
        Thread.sleep(forTimeInterval: 6)
        let status = try daemon.connect().request(["cmd": "status"])
        let samples = try XCTUnwrap(status["samples_in"] as? Int)
        XCTAssertLessThan(samples, 40 * 3 * 10, "at most 40 batches of 3 samples a second")
        XCTAssertGreaterThan(samples, 30, "the replay still plays")
        XCTAssertLessThan(try rssMB() - before, 20, "memory stays flat")
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
    }
}
