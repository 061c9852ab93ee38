import Foundation
import TestSupport
import XCTest

/// Floors from a barometer, end to end: a fake bmp280 (in_pressure_input in kPa, in_temp_input) read by the
/// real libiio in a private mount namespace (Tests/fixtures/fake-iio), its pressure rewritten 20 times a second from a
/// track synthesised from physics (TestSupport/PressureTrack.swift: barometric formula, BMP280 datasheet noise,
/// 1 hPa/h weather drift), over real recordings bundled with the sources, so that it runs on a clean clone:
/// walking from data/walk-inhand.csv.gz (Oxford Step Counter data set, CC BY 4.0), standing from
/// Tests/data/oxwalk-p30-standing.csv.gz (OxWalk, CC BY 4.0), fed as a bmi160. Real time throughout: the floor
/// counter's windows are in seconds, so a feed sped up would change the physics. The two scenarios run side by
/// side, each with its own daemon.
final class BarometerDaemonTests: XCTestCase {
    /// Walking in hand, steady from 20 s on (Tests/qemu uses the same stretch): the first 100 s of
    /// samsung_jamie_hard_inhand_1.
    private let walk = Binaries.bundledRecording
    /// OxWalk P30's wrist from 18 to 41 s, in which nobody steps: someone standing.
    private let still = Binaries.testData("oxwalk-p30-standing.csv.gz")

    /// Three floors up and two down by the stairs at 0.6 m/s, then a 30 Pa door slam for 2 s, all walking.
    static let stairs: PressureTrack = {
        var track = PressureTrack(segments: [
            .init(seconds: 5, walking: true), .stairs(floors: 3, rate: 0.6), .init(seconds: 4, walking: true),
            .stairs(floors: -2, rate: 0.6), .init(seconds: 9, walking: true)])
        track.spikes = [.init(start: 36, seconds: 2, pascal: 30)]
        return track
    }()

    /// 10 s of walking, standing 6 s, the same three floors by elevator at 1 m/s, standing 8 s, walking off.
    static let elevator = PressureTrack(segments: [
        .init(seconds: 10, walking: true), .init(seconds: 6, walking: false), .elevator(floors: 3, rate: 1),
        .init(seconds: 8, walking: false), .init(seconds: 8, walking: true)])

    /// The rows of a t,x,y,z recording between `from` and `to` seconds, rebased to start at `at`.
    private func rows(_ path: String, from: Double, to: Double, at start: Double) throws -> [String] {
        let text = try runCommand("/bin/gzip", ["-dc", path]).stdout
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count == 4, let t = Double(fields[0]), t >= from, t < to else { return nil }
            return String(format: "%.4f", t - from + start) + "," + fields[1...].joined(separator: ",")
        }
    }

    private func write(_ rows: [String], to path: String) throws {
        try ("t,x,y,z\n" + rows.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    private func startDaemon(accel: String, pressure: String, arguments: [String], directory: TemporaryDirectory,
                             accelExtra: [String: Any] = [:]) throws -> FakeIIODaemon {
        let socket = directory.file("stepd.sock")
        let accelerometer = ["name": "bmi160", "recording": accel, "once": true, "sampling_frequency_available": [25, 50, 100, 200]]
            .merging(accelExtra) { $1 }
        let devices: [[String: Any]] = [
            accelerometer,
            ["name": "bmp280", "label": "baro", "pressure": pressure, "pressure_clock": "iio:device0"]]
        let fake = try FakeIIO(devices: devices, command: [Binaries.stepd, "--socket", socket, "--state-dir",
                                                           directory.file("state"), "--log-level", "debug"] + arguments,
                               directory: directory)
        return FakeIIODaemon(socketPath: socket, fake: fake)
    }

    func testStairsCountAndAnElevatorAndADoorSlamDoNot() throws {
        try FakeIIO.requireNamespaces()
        let stairsDirectory = try TemporaryDirectory(), elevatorDirectory = try TemporaryDirectory()
        try write(try rows(walk, from: 20, to: 20 + Self.stairs.duration, at: 0), to: stairsDirectory.file("walk.csv"))
        try Self.stairs.csv(rateHz: 10).write(toFile: stairsDirectory.file("walk.pressure.csv"), atomically: true, encoding: .utf8)
        try write(try rows(walk, from: 20, to: 30, at: 0) + rows(still, from: 18, to: 41, at: 10) + rows(walk, from: 30, to: 38, at: 33),
                  to: elevatorDirectory.file("ride.csv"))
        try Self.elevator.csv(rateHz: 10).write(toFile: elevatorDirectory.file("ride.pressure.csv"), atomically: true, encoding: .utf8)

        let stairs = try startDaemon(accel: stairsDirectory.file("walk.csv"), pressure: stairsDirectory.file("walk.pressure.csv"),
                                     arguments: ["--barometer", "baro"], directory: stairsDirectory)
        let ride = try startDaemon(accel: elevatorDirectory.file("ride.csv"), pressure: elevatorDirectory.file("ride.pressure.csv"),
                                   arguments: ["--barometer", "iio:device1"], directory: elevatorDirectory)
        try stairs.waitForSocket()
        try ride.waitForSocket()
        // A watcher of PEDOMETER from the start, read at the end (its events wait in the socket meanwhile).
        let watcher = try stairs.connect()
        _ = try watcher.request(["cmd": "watch", "enable": true, "classes": ["PEDOMETER"]])

        let status = try stairs.waitUntil(timeout: 20, "the barometer running") { ($0["barometer"] as? [String: Any])?["state"] as? String == "running" }
        let barometer = try XCTUnwrap(status["barometer"] as? [String: Any])
        XCTAssertEqual(barometer["description"] as? String, "iio:device1 (bmp280, label baro)")
        XCTAssertEqual(barometer["kind"] as? String, "iio")
        let kpa = try XCTUnwrap(barometer["pressure_kpa"] as? Double)
        XCTAssertEqual(kpa, PressureTrack.pressureKilopascal(altitude: 120), accuracy: 0.05, "the fake's pressure, in kPa")
        // While the accelerometer refills, the barometer is read in its refills (100 Hz, 67 scans a refill):
        // its own thread sleeps without a timer.
        let along = try stairs.waitUntil(timeout: 10, "the barometer read in the accelerometer's refills") {
            Self.rate(of: $0).map { $0 < 2 } ?? false
        }
        XCTAssertEqual(Self.rate(of: along) ?? 0, 100.0 / 67, accuracy: 0.01, "the accelerometer's refills a second")
        let alongWakeUps = try stairs.barometerThreadWakeUps(seconds: 3)
        XCTAssertLessThanOrEqual(alongWakeUps, 1, "the barometer's thread wakes for nothing while the accelerometer reads it")

        // Stairs: every sample fed, then the count. The slam came 4 s after the descent, while walking. The
        // readings of the detector's last hold-back (10 s) wait for steps until the feed ends and the
        // accelerometer's refill times out.
        _ = try stairs.waitForAllSamples(timeout: 90)
        try stairs.waitUntil(timeout: 20, "the accelerometer's feed to end") { $0.sourceState != "running" }
        // No accelerometer refilling: the barometer's own thread reads at 4 Hz again.
        try stairs.waitUntil(timeout: 5, "the barometer read at 4 Hz again") { Self.rate(of: $0) == 4 }
        let ownWakeUps = try stairs.barometerThreadWakeUps(seconds: 2)
        XCTAssertGreaterThanOrEqual(ownWakeUps, 6, "4 reads a second on its own thread")
        let steps = try stairs.steps()
        XCTAssertGreaterThan(steps["steps"] as? Int ?? 0, 50, "a walk")
        XCTAssertEqual(steps["floors_ascended"] as? Int, 3, "3 floors up by the stairs; log:\n\(stairs.fake.log)")
        XCTAssertEqual(steps["floors_descended"] as? Int, 2, "2 floors down by the stairs, and no door slam; log:\n\(stairs.fake.log)")
        let height = try XCTUnwrap(try stairs.status()["relative_altitude_m"] as? Double)
        XCTAssertEqual(height, 3, accuracy: 1, "one floor up in all")
        // PEDOMETER events carry the floors: the watcher's last ones say 3 up and 2 down.
        var pedometers: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, pedometers.last?["floors_descended"] as? Int != 2 {
            let event = try watcher.readObject()
            if event["class"] as? String == "PEDOMETER" { pedometers.append(event) }
        }
        XCTAssertEqual(pedometers.last?["floors_ascended"] as? Int, 3, "\(pedometers.last ?? [:])")
        XCTAssertEqual(pedometers.last?["floors_descended"] as? Int, 2, "\(pedometers.last ?? [:])")
        let ups = pedometers.compactMap { $0["floors_ascended"] as? Int }
        XCTAssertEqual(ups, ups.sorted(), "floors only go up between resets")
        XCTAssertTrue(ups.contains(1) && ups.contains(2), "a PEDOMETER as each floor is counted: \(ups)")

        // The elevator: the same height, seen by the barometer, but no floor.
        _ = try ride.waitForAllSamples(timeout: 60)
        let rideStatus = try ride.status()
        XCTAssertEqual(try XCTUnwrap(rideStatus["relative_altitude_m"] as? Double), 9, accuracy: 1, "the ride's 9 m")
        let rideSteps = try ride.steps()
        XCTAssertGreaterThan(rideSteps["steps"] as? Int ?? 0, 10, "walked on and off")
        XCTAssertEqual(rideSteps["floors_ascended"] as? Int, 0, "an elevator is no floor climbed; log:\n\(ride.fake.log)")
        XCTAssertEqual(rideSteps["floors_descended"] as? Int, 0)

        // Floors reach the history and stepctl.
        let stepctl = try runCommand(Binaries.stepctl, ["--socket", stairs.socketPath, "steps"])
        XCTAssertTrue(stepctl.stdout.contains("floors: 3 up, 2 down"), stepctl.stdout)
        let history = try waitForHistoryFloors(stairs, 3)
        XCTAssertEqual(history, 3, "minute_bin.floors holds the floors climbed")
        let table = try runCommand(Binaries.stepctl, ["--socket", stairs.socketPath, "history", "--since", "1h", "--bin", "minute"])
        XCTAssertTrue(table.stdout.contains("floors"), table.stdout)
        XCTAssertTrue(table.stdout.split(separator: "\n").last?.hasSuffix(" 3") ?? false, "total floors 3:\n\(table.stdout)")
        let summary = try runCommand(Binaries.stepctl, ["--socket", stairs.socketPath, "summary"])
        XCTAssertTrue(summary.stdout.contains("climbed 3 floors"), summary.stdout)
        let status2 = try runCommand(Binaries.stepctl, ["--socket", stairs.socketPath, "status"])
        XCTAssertTrue(status2.stdout.contains("barometer: iio:device1 (bmp280, label baro) [iio]: running, 4.0 Hz"), status2.stdout)

        // Unplugged and back: disconnected, then running again, while the accelerometer carries on.
        try ride.fake.control("remove iio:device1")
        let gone = try ride.waitUntil(timeout: 10, "the barometer disconnected") {
            ($0["barometer"] as? [String: Any])?["state"] as? String == "disconnected"
        }
        XCTAssertEqual((gone["barometer"] as? [String: Any])?["error"] as? String,
                       "iio:device1 (bmp280, label baro) disconnected; waiting for it to come back")
        try ride.fake.control("add iio:device1")
        try ride.waitUntil(timeout: 10, "the barometer back") { ($0["barometer"] as? [String: Any])?["state"] as? String == "running" }
        XCTAssertEqual(stairs.fake.terminate(), 0)
        XCTAssertEqual(ride.fake.terminate(), 0)
    }

    /// The stairs counted in the sensor counter mode (`--sensor-step-counter`): the walk is long enough before the
    /// climb for the counter to take over, so that the climb and the descent are walked with capture off, the
    /// steps the counter's and the barometer read in its reads every 2 s (3 readings in the floor counter's 6 s
    /// spike median); the door slam still counts no floor.
    func testStairsCountInTheSensorCounterMode() throws {
        try FakeIIO.requireNamespaces()
        let directory = try TemporaryDirectory()
        var track = PressureTrack(segments: [
            .init(seconds: 16, walking: true), .stairs(floors: 3, rate: 0.6), .init(seconds: 4, walking: true),
            .stairs(floors: -2, rate: 0.6), .init(seconds: 9, walking: true)])
        track.spikes = [.init(start: track.duration - 5, seconds: 2, pascal: 30)]
        try write(try rows(walk, from: 20, to: 20 + track.duration, at: 0), to: directory.file("walk.csv"))
        try track.csv(rateHz: 10).write(toFile: directory.file("walk.pressure.csv"), atomically: true, encoding: .utf8)
        // The bundled walk's footfalls on the same clock: what the chip's own counter counts as the feed goes.
        let truth = try String(contentsOfFile: Binaries.repository.appendingPathComponent("data/walk-inhand.steps.csv").path,
                               encoding: .utf8)
        let footfalls = truth.split(separator: "\n").dropFirst().compactMap { Double($0) }
            .filter { $0 >= 20 && $0 < 20 + track.duration }.map { String(format: "%.3f", $0 - 20) }
        try (["t"] + footfalls).joined(separator: "\n").write(toFile: directory.file("walk.steps.csv"), atomically: true, encoding: .utf8)
        let daemon = try startDaemon(accel: directory.file("walk.csv"), pressure: directory.file("walk.pressure.csv"),
                                     arguments: ["--barometer", "baro", "--sensor-step-counter"], directory: directory,
                                     accelExtra: ["steps": directory.file("walk.steps.csv"), "trigger": true])
        try daemon.waitForSocket()
        try daemon.waitUntil(timeout: 30, "the sensor to count before the climb") { status in
            (status["steps"] as? [String: Any])?["counting"] as? String == "sensor"
        }
        XCTAssertEqual(try daemon.steps()["floors_ascended"] as? Int, 0, "no floor before the stairs")
        // The floors are counted the detector's hold-back (10 s) after their readings, as the counter's reads
        // bring the steps around them; the descent's last floor after the feed's end.
        var steps: [String: Any] = [:]
        // 3 up and 2 down; or, in about one phase of the counter's reads in six, 2 up and 1 down: read every 2 s,
        // one reading's noise can take the climb under its third floor's counting height (docs/barometer.md,
        // "Known limit").
        try pollUntil("3 floors up and 2 down (or 2 and 1)", timeout: track.duration + 60, every: 0.2,
                      detail: "\(steps); log:\n\(daemon.fake.log)") {
            steps = try daemon.steps()
            guard let up = steps["floors_ascended"] as? Int, let down = steps["floors_descended"] as? Int else { return false }
            return up >= 2 && down == up - 1
        }
        let status = try daemon.status()
        XCTAssertEqual((status["steps"] as? [String: Any])?["counting"] as? String, "sensor", "the counter counted the stairs")
        // The slam's readings (5 s before the feed's end) are counted once the walk has ended and the counter's
        // next reads (every 5 s when still) pass their hold-back: no floor may come from them meanwhile.
        try pollUntil("the walk to end after the feed", timeout: 60, every: 0.2, detail: daemon.fake.log) {
            daemon.fake.log.contains("the walk ends here")
        }
        // An absence, watched for a fixed 15 s: the hold-back and two still reads of the counter.
        let watchedUntil = Date().addingTimeInterval(15)
        let descended = steps["floors_descended"] as? Int
        while Date() < watchedUntil, steps["floors_descended"] as? Int == descended {
            usleep(200_000)  // the interval of a watch for something that must not happen, not a wait for an event
            steps = try daemon.steps()
        }
        let up = steps["floors_ascended"] as? Int ?? 0
        XCTAssert(up == 3 || up == 2, "3 floors up by the stairs (2 in the known limit): \(up); log:\n\(daemon.fake.log)")
        XCTAssertEqual(steps["floors_descended"] as? Int, up - 1, "2 floors down (1 with 2 up), and no door slam; log:\n\(daemon.fake.log)")
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }

    /// Unplugged while the accelerometer's thread reads it: the read's fault goes back to the barometer's loop,
    /// which says `disconnected`; the accelerometer runs on; plugged back, its reads are handed over again.
    func testUnpluggedWhileReadInTheAccelerometersRefills() throws {
        try FakeIIO.requireNamespaces()
        let directory = try TemporaryDirectory()
        try write(try rows(walk, from: 20, to: 60, at: 0), to: directory.file("walk.csv"))
        let track = PressureTrack(segments: [.init(seconds: 40, walking: true)])
        try track.csv(rateHz: 10).write(toFile: directory.file("walk.pressure.csv"), atomically: true, encoding: .utf8)
        let daemon = try startDaemon(accel: directory.file("walk.csv"), pressure: directory.file("walk.pressure.csv"),
                                     arguments: ["--barometer", "baro"], directory: directory)
        try daemon.waitForSocket()
        try daemon.waitUntil(timeout: 15, "the barometer read in the accelerometer's refills") {
            $0.sourceState == "running" && (Self.rate(of: $0).map { $0 < 2 } ?? false)
        }
        try daemon.fake.control("remove iio:device1")
        let gone = try daemon.waitUntil(timeout: 10, "the barometer disconnected") {
            ($0["barometer"] as? [String: Any])?["state"] as? String == "disconnected"
        }
        XCTAssertEqual((gone["barometer"] as? [String: Any])?["error"] as? String,
                       "iio:device1 (bmp280, label baro) disconnected; waiting for it to come back")
        let before = try XCTUnwrap(gone["samples_in"] as? Int)
        let after = try pollFor("samples to arrive without the barometer", timeout: 15, every: 0.1, detail: daemon.fake.log) {
            let status = try daemon.status()
            return (status["samples_in"] as? Int ?? 0) > before + 60 ? status : nil
        }
        XCTAssertEqual(after.sourceState, "running", "the accelerometer runs on")
        try daemon.fake.control("add iio:device1")
        try daemon.waitUntil(timeout: 10, "the barometer back, read in the refills") {
            ($0["barometer"] as? [String: Any])?["state"] as? String == "running" && (Self.rate(of: $0).map { $0 < 2 } ?? false)
        }
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }

    private static func rate(of status: [String: Any]) -> Double? {
        let barometer = status["barometer"] as? [String: Any]
        return barometer?["rate_hz"] as? Double ?? (barometer?["rate_hz"] as? Int).map(Double.init)
    }

    /// The same stairs replayed from a recording with its pressure file beside it (walk.pressure.csv), at 10x:
    /// `stepd analyze` and the daemon's replay count them with the same code, on the recording's clock.
    func testReplayAndAnalyzeCountFloorsFromThePressureFileBeside() throws {
        let directory = try TemporaryDirectory()
        let recording = directory.file("walk.csv")
        try write(try rows(walk, from: 20, to: 20 + Self.stairs.duration, at: 0), to: recording)
        try Self.stairs.csv(rateHz: 4).write(toFile: directory.file("walk.pressure.csv"), atomically: true, encoding: .utf8)

        let analyzed = try runCommand(Binaries.stepd, ["analyze", "--json", recording])
        XCTAssertEqual(analyzed.status, 0, analyzed.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(analyzed.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["floors_ascended"] as? Int, 3, analyzed.stdout)
        XCTAssertEqual(object["floors_descended"] as? Int, 2, analyzed.stdout)

        let daemon = try Daemon(arguments: ["--replay", recording, "--speed", "10"], directory: directory)
        // The pressure file's end is reported just after the recording's: both are waited for.
        try daemon.waitUntil(timeout: 30, "the replay and its pressure file to finish") {
            ($0["source"] as? [String: Any])?["state"] as? String == "finished"
                && ($0["barometer"] as? [String: Any])?["state"] as? String == "finished"
        }
        let client = try daemon.connect()
        let steps = try client.request(["cmd": "steps"])
        XCTAssertEqual(steps["floors_ascended"] as? Int, 3)
        XCTAssertEqual(steps["floors_descended"] as? Int, 2)
        let barometer = try XCTUnwrap(try client.request(["cmd": "status"])["barometer"] as? [String: Any])
        XCTAssertEqual(barometer["kind"] as? String, "replay")
        XCTAssertEqual(barometer["description"] as? String, "replay:\(directory.file("walk.pressure.csv"))")
        XCTAssertEqual(barometer["state"] as? String, "finished")
        XCTAssertEqual(barometer["rate_hz"] as? Double ?? (barometer["rate_hz"] as? Int).map(Double.init), 4)
        let deadline = Date().addingTimeInterval(10)
        var history: [String: Any] = [:]
        repeat {
            history = try client.request(["cmd": "history", "bin": "hour", "from": Self.anHourAgo])
            if history["floors"] as? Int == 3 { break }
            usleep(200_000)  // poll interval of a wait for a state, not a fixed wait
        } while Date() < deadline
        XCTAssertEqual(history["floors"] as? Int, 3, "\(history)")
        let firstSteps = try XCTUnwrap(steps["steps"] as? Int)
        XCTAssertEqual(daemon.terminate(), 0)

        // SIGTERM and a start on the same history: the floors since the last reset go on as the steps do,
        // shown from the new run's first reading (here a level walk: nothing added).
        let level = directory.file("level.csv")
        try write(try rows(walk, from: 20, to: 30, at: 0), to: level)
        try "t,p_kpa\n0,100.5\n10,100.5\n".write(toFile: directory.file("level.pressure.csv"), atomically: true, encoding: .utf8)
        let restarted = try Daemon(arguments: ["--replay", level, "--speed", "10"], directory: directory)
        try restarted.waitUntil(timeout: 30, "the level replay to finish") { $0.sourceState == "finished" }
        let again = try restarted.connect().request(["cmd": "steps"])
        XCTAssertGreaterThan(again["steps"] as? Int ?? 0, firstSteps, "the steps go on")
        XCTAssertEqual(again["floors_ascended"] as? Int, 3, "\(again)")
        XCTAssertEqual(again["floors_descended"] as? Int, 2, "\(again)")
        XCTAssertEqual(restarted.terminate(), 0)

        // --no-barometer leaves the pressure file unread: no floors, and STATUS says there is no barometer.
        let elsewhere = try TemporaryDirectory()
        let unread = try Daemon(arguments: ["--replay", recording, "--speed", "10", "--no-barometer"], directory: elsewhere)
        try unread.waitUntil(timeout: 30, "the replay without its pressure to finish") {
            ($0["source"] as? [String: Any])?["state"] as? String == "finished"
        }
        let unreadClient = try unread.connect()
        XCTAssertNil(try unreadClient.request(["cmd": "steps"])["floors_ascended"], "--no-barometer: no floors")
        XCTAssertEqual((try unreadClient.request(["cmd": "status"])["barometer"] as? [String: Any])?["kind"] as? String, "none")
        XCTAssertEqual(unread.terminate(), 0)

        // A broken pressure file is the recording's fault: 65, with the line; without one, no floors.
        try "t,p_kpa\n0,100.1\n1,abc\n".write(toFile: directory.file("walk.pressure.csv"), atomically: true, encoding: .utf8)
        let broken = try runCommand(Binaries.stepd, ["analyze", recording])
        XCTAssertEqual(broken.status, 65)
        XCTAssertEqual(broken.stderr, "stepd: \(directory.file("walk.pressure.csv")):3: expected the header 't,p_kpa' or two numbers (seconds, kPa), found '1,abc'\n")
        try FileManager.default.removeItem(atPath: directory.file("walk.pressure.csv"))
        let plain = try runCommand(Binaries.stepd, ["analyze", "--json", recording])
        XCTAssertFalse(plain.stdout.contains("floors"), plain.stdout)
    }

    static var anHourAgo: String { ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600)) }

    /// Polls HISTORY (hour bins) until its floors reach `expected` (the store commits every 0.5 s).
    private func waitForHistoryFloors(_ daemon: FakeIIODaemon, _ expected: Int) throws -> Int? {
        let deadline = Date().addingTimeInterval(10)
        var floors: Int?
        while Date() < deadline {
            let reply = try daemon.connect().request(["cmd": "history", "bin": "hour", "from": Self.anHourAgo])
            floors = reply["floors"] as? Int
            if floors == expected { break }
            usleep(200_000)  // poll interval of a wait for a state, not a fixed wait
        }
        return floors
    }

    func testAMissingBarometerIsWaitedForAndAPresentOneListed() throws {
        let accel: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording]
        // Named but absent: waiting, with the reason; listed devices show none.
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let fake = try FakeIIO(devices: [accel], command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"),
                                                           "--barometer", "lps22hb"], directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        let waiting = try daemon.waitUntil(timeout: 10, "the barometer waiting") {
            ($0["barometer"] as? [String: Any])?["state"] as? String == "waiting"
        }
        XCTAssertEqual((waiting["barometer"] as? [String: Any])?["error"] as? String,
                       "no IIO barometer at 'local:': found only iio:device0 (bmi160: accel, timestamp)")
        XCTAssertNil(waiting["relative_altitude_m"])
        XCTAssertEqual(fake.terminate(), 0)

        let disabled = try FakeIIO.run(devices: [accel, ["name": "bmp280", "pressure": try pressureFile()]],
                                       command: ["sh", "-c", "\(Binaries.stepd) --list-devices"])
        XCTAssertTrue(disabled.stdout.contains("iio:device1  (barometer)\n  name:         bmp280"), disabled.stdout)
        XCTAssertTrue(disabled.stdout.contains("pressure:     in_pressure_input (kPa), polled"), disabled.stdout)
    }

    func testNoBarometerLeavesThePresentOneAlone() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let fake = try FakeIIO(devices: [["name": "bmi160", "recording": Binaries.bundledRecording],
                                         ["name": "bmp280", "pressure": try pressureFile()]],
                               command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"), "--no-barometer"],
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        let status = try daemon.waitUntil(timeout: 10, "samples") { ($0["samples_in"] as? Int ?? 0) > 100 }
        let barometer = try XCTUnwrap(status["barometer"] as? [String: Any])
        XCTAssertEqual(barometer["state"] as? String, "unavailable")
        XCTAssertEqual(barometer["error"] as? String, "barometer disabled (--no-barometer)")
        XCTAssertNil(try daemon.steps()["floors_ascended"], "no barometer read, no floors")
        XCTAssertEqual(fake.terminate(), 0)
    }

    /// `--barometer X` with `--no-barometer` is refused, on the command line (64) as in stepd.conf (78), and so
    /// is a path for a device; a replay says that it ignores `--barometer` (its barometer is the pressure file).
    func testContradictoryBarometerOptionsAreRefusedAndAReplaySaysItIgnoresOne() throws {
        let directory = try TemporaryDirectory()
        // A replay of a file that is not there after the flags: a daemon that accepted them would exit 66.
        let elsewhere = ["--socket", directory.file("x.sock"), "--state-dir", directory.file("state"), "--replay", directory.file("none.csv")]
        let both = try runCommand(Binaries.stepd, ["--barometer", "bmp280", "--no-barometer"] + elsewhere)
        XCTAssertEqual(both.status, 64, both.stderr)
        XCTAssertTrue(both.stderr.contains("--barometer bmp280 names the barometer to read and --no-barometer reads none: give one of them"),
                      both.stderr)
        let config = directory.file("stepd.conf")
        try "no_gps = true\nbarometer = baro\nno_barometer = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        let file = try runCommand(Binaries.stepd, ["--config", config] + elsewhere)
        XCTAssertEqual(file.status, 78, file.stderr)
        XCTAssertTrue(file.stderr.hasPrefix("stepd: \(config):2: key \"barometer\": --barometer baro names the barometer to read and --no-barometer reads none"),
                      file.stderr)
        let path = try runCommand(Binaries.stepd, ["--barometer", "/sys/bus/iio/devices/iio:device1"] + elsewhere)
        XCTAssertEqual(path.status, 64, path.stderr)
        XCTAssertTrue(path.stderr.contains("expected an IIO device's name, label or iio:deviceN (not a path)"), path.stderr)

        let replay = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--barometer", "bmp280", "--no-gps"], directory: directory)
        try pollUntil("the warning in the log", timeout: 10, detail: replay.log) {
            replay.log.contains("--barometer bmp280 is ignored: a replay's barometer is the pressure file beside its recording (walk-inhand.pressure.csv or walk-inhand.pressure.csv.gz)")
        }
        XCTAssertEqual((try replay.connect().request(["cmd": "status"])["barometer"] as? [String: Any])?["kind"] as? String, "none")
        XCTAssertEqual(replay.terminate(), 0)
    }

    private func pressureFile() throws -> String {
        let directory = try TemporaryDirectory()
        keep.append(directory)
        let path = directory.file("p.csv")
        try "t,p_kpa\n0,100.5\n1000,100.5\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private var keep: [TemporaryDirectory] = []
}
