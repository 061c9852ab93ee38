import Foundation
import StepProcessing
import XCTest

/// The daemon replaying a recording counts exactly what `stepd analyze` counts on the same file.
final class ReplayDaemonTests: XCTestCase {
    private func analyze(_ file: String, detector: String) throws -> (steps: Int, samples: Int) {
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", "--detector", detector, file])
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return (try XCTUnwrap(object["steps"] as? Int), try XCTUnwrap(object["samples"] as? Int))
    }

    private func replayCount(_ file: String, detector: String, speed: Int, extra: [String] = []) throws -> (steps: Int, status: [String: Any]) {
        let daemon = try Daemon(arguments: ["--replay", file, "--speed", "\(speed)", "--detector", detector] + extra)
        try daemon.waitUntil(timeout: 120, "the replay to finish") { status in
            (status["source"] as? [String: Any])?["state"] as? String == "finished"
        }
        let client = try daemon.connect()
        let steps = try client.request(["cmd": "steps"])
        let status = try client.request(["cmd": "status"])
        XCTAssertEqual(steps["detector"] as? String, detector)
        XCTAssertEqual(daemon.terminate(), 0, "SIGTERM gives a clean exit 0")
        return (try XCTUnwrap(steps["steps"] as? Int), status)
    }

    func testReplayCountEqualsOfflineAnalysisForBothDetectors() throws {
        for detector in ["threshold", "peak"] {
            let offline = try analyze(Binaries.bundledRecording, detector: detector)
            XCTAssertGreaterThan(offline.steps, 100)
            let live = try replayCount(Binaries.bundledRecording, detector: detector, speed: 40)
            XCTAssertEqual(live.steps, offline.steps, "detector \(detector)")
            XCTAssertEqual(live.status["samples_in"] as? Int, offline.samples)
        }
    }

    /// One trace of each shared set (a phone in a pocket, 15 minutes of free living on a wrist, a lower-back walk
    /// with a turn): streaming analysis and the live daemon count the same steps.
    func testReplayOfASharedTraceEqualsOfflineAnalysis() throws {
        let traces = [("oxford-phone/pixel_jamie_hard_frontpocket_1", ["threshold", "peak"]),
                      ("oxwalk-wrist/oxwalk_p30_wrist_first", ["peak"]),
                      ("lowerback-turns/s01_t1", ["peak"])]
        for (name, detectors) in traces {
            let trace = try Binaries.sharedData("steps/\(name)/accel.csv.gz")
            for detector in detectors {
                let offline = try analyze(trace.path, detector: detector)
                let live = try replayCount(trace.path, detector: detector, speed: 100)
                XCTAssertEqual(live.steps, offline.steps, "\(name), detector \(detector)")
                XCTAssertEqual(live.status["samples_in"] as? Int, offline.samples, name)
            }
        }
    }

    /// The bundled walk divided by 9.80665 (g) replays to the count of the walk in m/s², with the notice in the
    /// daemon's log; `--units mps2` takes the file at its word.
    func testAReplayOfTheWalkInGCountsAsTheWalkInMetresPerSecondSquared() throws {
        let directory = try TemporaryDirectory()
        let g = standardGravity
        let inG = try rewrittenBundledWalk("in-g.csv", in: directory) { t, x, y, z in "\(t),\(x / g),\(y / g),\(z / g)" }
        let offline = try analyze(Binaries.bundledRecording, detector: "peak")
        let daemon = try Daemon(arguments: ["--replay", inG, "--speed", "40"])
        try daemon.waitUntil(timeout: 120, "the replay to finish") { status in
            (status["source"] as? [String: Any])?["state"] as? String == "finished"
        }
        let steps = try daemon.connect().request(["cmd": "steps"])
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertEqual(steps["steps"] as? Int, offline.steps)
        XCTAssertTrue(daemon.log.contains("replay \(inG): the accelerations look like g (median magnitude 1.0"), daemon.log)
        let literal = try replayCount(inG, detector: "peak", speed: 40, extra: ["--units", "mps2"])
        XCTAssertLessThan(literal.steps, offline.steps / 2)
    }

    func testAnalyzeThresholdRunsOnEveryTrace() throws {
        let root = try Binaries.sharedData("steps")
        var traces = 0
        for set in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() {
            let setURL = root.appendingPathComponent(set)
            for trace in try FileManager.default.contentsOfDirectory(atPath: setURL.path).sorted() {
                let file = setURL.appendingPathComponent(trace).appendingPathComponent("accel.csv.gz").path
                guard FileManager.default.fileExists(atPath: file) else { continue }
                let result = try runCommand(Binaries.stepd, ["analyze", "--detector", "threshold", "--json", file])
                XCTAssertEqual(result.status, 0, "\(trace): \(result.stderr)")
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                XCTAssertEqual(object["detector"] as? String, "threshold")
                let times = try XCTUnwrap(object["step_times"] as? [Double])
                XCTAssertEqual(times.count, object["steps"] as? Int)
                XCTAssertEqual(times, times.sorted(), "\(trace): step times in order")
                // Trials run from a 10 m walk with a turn (about 20 s) to 2.5-minute laps and hours of free living.
                let duration = try XCTUnwrap(object["duration_s"] as? Double)
                XCTAssertGreaterThan(duration, 5, trace)
                XCTAssertLessThanOrEqual(times.last ?? 0, (times.first ?? 0) + duration, "\(trace): steps inside the recording")
                traces += 1
            }
        }
        XCTAssertGreaterThanOrEqual(traces, 49)
    }

    func testAnalyzeRejectsAMissingOrMalformedFile() throws {
        let dir = try TemporaryDirectory()
        let missing = try runCommand(Binaries.stepd, ["analyze", dir.file("nope.csv")])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssert(missing.stderr.contains("cannot open recording"), missing.stderr)
        try "t,x,y,z\n0,1,2,3\n0.01,1,two,3\n".write(toFile: dir.file("bad.csv"), atomically: true, encoding: .utf8)
        let bad = try runCommand(Binaries.stepd, ["analyze", dir.file("bad.csv")])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssert(bad.stderr.contains("bad.csv:3"), "names the line: \(bad.stderr)")
    }

    func testPlainCSVAndGzipGiveTheSameCount() throws {
        let dir = try TemporaryDirectory()
        let plain = dir.file("walk.csv")
        let text = try runCommand("/bin/sh", ["-c", "gzip -dc '\(Binaries.bundledRecording)' > '\(plain)'"])
        XCTAssertEqual(text.status, 0)
        XCTAssertEqual(try analyze(plain, detector: "peak").steps, try analyze(Binaries.bundledRecording, detector: "peak").steps)
    }
}
