import Foundation
import XCTest

/// `--sensor-step-counter` on a fake bmi160 that exposes the kernel's step ABI (in_steps_en, in_steps_input,
/// counting the bundled walk's ground truth as its clock advances): through the real libiio, the daemon stops
/// capture once its detector and the counter agree on the walk, counts with the counter while the buffer is
/// off, brings capture back for a MOTION watcher, and STATUS says which counts. Real time (speed 1): the
/// counter's reads and the samples share the monotonic clock, as on a device.
final class SensorStepCounterTests: XCTestCase {
    private var groundTruth: String { Binaries.repository.appendingPathComponent("data/walk-inhand.steps.csv").path }

    private func bmi160(_ extra: [String: Any] = [:]) -> [String: Any] {
        var device: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording, "trigger": true,
                                     "sampling_frequency_available": [25, 50, 62.5, 100, 200]]
        device.merge(extra) { $1 }
        return device
    }

    private func startDaemon(_ device: [String: Any], others: [[String: Any]] = [], arguments: [String]) throws -> FakeIIODaemon {
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let fake = try FakeIIO(devices: [device] + others,
                               command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"),
                                         "--log-level", "info"] + arguments, directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        return daemon
    }

    private func counting(_ status: [String: Any]) -> (counting: String?, mode: String?) {
        let steps = status["steps"] as? [String: Any]
        return (steps?["counting"] as? String, steps?["sensor_counter"] as? String)
    }

    func testTheSensorCountsAWalkWithCaptureOffAndAMotionWatcherBringsCaptureBack() throws {
        let daemon = try startDaemon(bmi160(["steps": groundTruth]), arguments: ["--sensor-step-counter"])
        defer { _ = daemon.fake.terminate() }
        // A STEP watcher from the start: its counts must follow each other across every switch.
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "enable": true, "classes": ["STEP"]])

        let first = try daemon.waitUntil(timeout: 10, "capture to run") { $0.sourceState == "running" }
        XCTAssertEqual(counting(first).mode, "on")
        XCTAssertEqual(counting(first).counting, "detector")

        // Walking steadily, the detector and the counter agree over 10 s: the counter takes over, the buffer goes.
        try daemon.waitUntil(timeout: 25, "the sensor to count") { counting($0).counting == "sensor" }
        try pollUntil("the buffer to be switched off", timeout: 5, detail: daemon.fake.log) {
            daemon.fake.log.contains("buffer off")
        }
        let samplesOff = try XCTUnwrap(try daemon.status()["samples_in"] as? Int)
        let stepsOff = try XCTUnwrap(try daemon.steps()["steps"] as? Int)
        // Steps counted with capture off: the counter's reads (every 2 s while walking) bring them.
        try pollUntil("the counter's steps with capture off", timeout: 30, every: 0.2, detail: daemon.fake.log) {
            (try daemon.steps()["steps"] as? Int ?? 0) - stepsOff >= 5
        }
        let during = try daemon.status()
        XCTAssertEqual(counting(during).counting, "sensor")
        XCTAssertEqual(during["samples_in"] as? Int, samplesOff, "no sample captured while the sensor counts")
        let sensorPhase = try daemon.steps()
        let stepsSensor = try XCTUnwrap(sensorPhase["steps"] as? Int)
        XCTAssertGreaterThanOrEqual(stepsSensor - stepsOff, 5, "the walk goes on counting with capture off (1.8 steps/s)")
        // While the sensor counts, the total moves with the counter, apart by what the two had counted at the
        // switch: the detector may have missed the walk's first step or count a step a moment before the
        // ground truth's foot switch (-1...+2 here). The detector's steps after the switch, counted by both,
        // would put the total 2 or 3 steps further ahead (the 1.5 s of capture after the switch).
        let lead = try XCTUnwrap(sensorPhase["hardware_steps"] as? Int) - stepsSensor
        XCTAssertTrue((-1...3).contains(lead), "the counter \(lead) steps ahead of the daemon's total: \(sensorPhase)")

        // A MOTION watcher needs samples: capture comes back within a read (2 s while walking).
        let motion = try daemon.connect()
        _ = try motion.request(["cmd": "watch", "enable": true, "classes": ["MOTION"], "rate_hz": 5])
        try daemon.waitUntil(timeout: 5, "capture to come back") { counting($0).counting == "detector" }
        let event = try motion.readObject()
        XCTAssertEqual(event["class"] as? String, "MOTION")
        let back = try pollFor("samples captured again", timeout: 15, every: 0.1, detail: daemon.fake.log) {
            let status = try daemon.status()
            return (status["samples_in"] as? Int ?? 0) > samplesOff ? status : nil
        }
        XCTAssertGreaterThan(try XCTUnwrap(back["samples_in"] as? Int), samplesOff, "samples again")

        // The totals are continuous: each STEP event's count is the previous one plus one, across both switches,
        // and the total stays near the counter's (the ground truth as fed).
        let steps = try daemon.steps()
        let total = try XCTUnwrap(steps["steps"] as? Int)
        let hardware = try XCTUnwrap(steps["hardware_steps"] as? Int)
        XCTAssertLessThanOrEqual(abs(total - hardware), 6, "daemon \(total), sensor \(hardware)")
        XCTAssertEqual((steps["today"] as? [String: Any])?["steps"] as? Int, total, "today's figures: \(steps)")
        // The history (the store, minute bins) holds the sensor's steps too, up to its last commit (<= 2 s).
        let history = try daemon.connect().request(["cmd": "history", "bin": "hour"])
        let stored = try XCTUnwrap(history["steps"] as? Int, "\(history)")
        XCTAssertTrue((total - 10...total).contains(stored), "history \(stored), daemon \(total)")
        print("SensorStepCounterTests: daemon \(total) steps, the sensor's counter \(hardware), history \(stored)")
        var counts: [Int] = []
        while counts.last ?? 0 < total - 2, let event = try? watcher.readObject() {
            if event["class"] as? String == "STEP", let n = event["steps"] as? Int { counts.append(n) }
        }
        XCTAssertGreaterThan(counts.count, 20)
        XCTAssertEqual(counts, Array((counts.first ?? 0)...(counts.last ?? 0)), "no STEP count skipped or repeated")
        try waitForLog("buffer on", in: { daemon.fake.log })
    }

    /// A recording that starts with the wearer still for `stillSeconds` (gravity with a few mg of jitter, about
    /// the walk's first posture) and goes on with the bundled walk; its steps shifted with it.
    private func stillThenWalk(stillSeconds: Double, in directory: TemporaryDirectory) throws -> (String, String) {
        let walk = try runCommand("/bin/sh", ["-c", "zcat '\(Binaries.bundledRecording)'"])
        XCTAssertEqual(walk.status, 0, walk.stderr)
        var lines = ["t,x,y,z"]
        for i in 0..<Int(stillSeconds * 100) {
            let jitter = 0.01 * sin(Double(i) * 1.7)
            lines.append(String(format: "%.4f,%.4f,%.4f,%.4f", Double(i) / 100, -0.35 + jitter, 5.67 - jitter, 8.48 + jitter))
        }
        for line in walk.stdout.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",")
            guard fields.count == 4, let t = Double(fields[0]) else { continue }
            lines.append(String(format: "%.4f,", t + stillSeconds) + fields[1...].joined(separator: ","))
        }
        let recording = directory.file("still-then-walk.csv"), truth = directory.file("still-then-walk.steps.csv")
        try lines.joined(separator: "\n").write(toFile: recording, atomically: true, encoding: .utf8)
        let steps = try String(contentsOfFile: groundTruth, encoding: .utf8).split(separator: "\n").dropFirst()
            .compactMap { Double($0) }.map { String(format: "%.3f", $0 + stillSeconds) }
        try (["t"] + steps).joined(separator: "\n").write(toFile: truth, atomically: true, encoding: .utf8)
        return (recording, truth)
    }

    /// Still: after 10 s of capture the counter counts, read every 5 s. The walk starts: the counter moves after
    /// the still stretch, capture comes back for the bout's start, and the total follows the counter.
    /// The device lies still until the daemon has let the counter count (`pause_at`, then `go`): a still stretch
    /// of fixed length was over before a loaded machine's daemon had seen 10 s of it, and the walk's steps then
    /// stopped capture for another reason.
    func testStillTheSensorCountsAndAWalkStartingBringsCaptureBack() throws {
        let files = try TemporaryDirectory()
        let (recording, truth) = try stillThenWalk(stillSeconds: 14, in: files)
        let daemon = try startDaemon(bmi160(["recording": recording, "steps": truth, "pause_at": 13]),
                                     arguments: ["--sensor-step-counter"])
        defer { _ = daemon.fake.terminate() }
        try daemon.waitUntil(timeout: 60, "the sensor to count while still") { counting($0).counting == "sensor" }
        try waitForLog("counts now (still for 10 s)", in: { daemon.fake.log })
        XCTAssertEqual(try daemon.steps()["steps"] as? Int, 0)
        try daemon.fake.control("go iio:device0")
        try daemon.waitUntil(timeout: 30, "capture to come back at the walk's start") { counting($0).counting == "detector" }
        try waitForLog("the counter moved after a still stretch: a bout starts", in: { daemon.fake.log })
        let early = try XCTUnwrap(try daemon.steps()["steps"] as? Int)
        XCTAssertGreaterThan(early, 0, "the counter's steps before capture came back are counted")
        let steps = try pollFor("the detector to count on", timeout: 20, every: 0.2, detail: daemon.fake.log) {
            let steps = try daemon.steps()
            return (steps["steps"] as? Int ?? 0) > early ? steps : nil
        }
        let total = try XCTUnwrap(steps["steps"] as? Int), hardware = try XCTUnwrap(steps["hardware_steps"] as? Int)
        XCTAssertGreaterThan(total, early, "the detector counts on")
        XCTAssertLessThanOrEqual(abs(total - hardware), 6, "daemon \(total), sensor \(hardware)")
        print("SensorStepCounterTests, walk start: \(early) steps counted when capture came back, daemon \(total), sensor \(hardware)")
    }

    /// With a barometer: once the counter counts and capture is off, the barometer is read in the counter's
    /// reads (IIOReadAlong), as in the refills, at their pace (every 2 s walking), and its own thread sleeps
    /// (read at 4 Hz on its own thread, it would wake 16 times in these 4 s).
    func testWithCaptureOffTheBarometerIsReadInTheCountersReads() throws {
        let files = try TemporaryDirectory()
        let pressure = files.file("p.csv")
        try "t,p_kpa\n0,100.5\n1000,100.5\n".write(toFile: pressure, atomically: true, encoding: .utf8)
        let daemon = try startDaemon(bmi160(["steps": groundTruth]), others: [["name": "bmp280", "pressure": pressure]],
                                     arguments: ["--sensor-step-counter"])
        defer { _ = daemon.fake.terminate() }
        func rate(_ status: [String: Any]) -> Double? {
            let barometer = status["barometer"] as? [String: Any]
            return barometer?["rate_hz"] as? Double ?? (barometer?["rate_hz"] as? Int).map(Double.init)
        }
        try daemon.waitUntil(timeout: 30, "the sensor to count") { counting($0).counting == "sensor" }
        let paced = try daemon.waitUntil(timeout: 10, "the barometer read at the counter's pace") {
            rate($0).map { $0 < 1 } ?? false
        }
        XCTAssertEqual(rate(paced) ?? 0, 0.5, accuracy: 0.01, "one read every 2 s walking")
        XCTAssertLessThanOrEqual(try daemon.barometerThreadWakeUps(seconds: 4), 1, "the barometer's own thread sleeps")
        let barometer = try XCTUnwrap(try daemon.status()["barometer"] as? [String: Any])
        XCTAssertEqual(barometer["state"] as? String, "running")
        XCTAssertEqual(barometer["pressure_kpa"] as? Double ?? 0, 100.5, accuracy: 0.001)
        XCTAssertEqual(counting(try daemon.status()).counting, "sensor")
    }

    /// Asked for on a device without a counter: it says so, and capture runs as without the flag.
    func testADeviceWithoutACounterSaysSoAndKeepsCapturing() throws {
        let daemon = try startDaemon(bmi160(), arguments: ["--sensor-step-counter"])
        defer { _ = daemon.fake.terminate() }
        let status = try daemon.waitUntil(timeout: 10, "the mode to be judged") { counting($0).mode == "no counter" }
        XCTAssertEqual(counting(status).counting, "detector")
        try daemon.waitUntil(timeout: 20, "samples") { ($0["samples_in"] as? Int ?? 0) > 250 }
        XCTAssertFalse(daemon.fake.log.contains("buffer off"), daemon.fake.log)
        try waitForLog("has no step counter (in_steps_input): the detector counts", in: { daemon.fake.log })
    }
}
