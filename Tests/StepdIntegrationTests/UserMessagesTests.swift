import Foundation
import XCTest

/// What a new user reads (issue 40): each message true and saying what to do, shown on the real binaries.
final class UserMessagesTests: XCTestCase {
    private let replay = ["--replay", Binaries.bundledRecording, "--loop", "--speed", "4", "--no-gps"]

    /// `stepctl stpes` and `stepd analyse x` name the command meant (64, as any usage error), instead of
    /// ArgumentParser's "Unexpected argument"; a word near no command lists them; real commands still run.
    func testMistypedCommandsNameTheCommandMeant() throws {
        let steps = try runCommand(Binaries.stepctl, ["stpes"])
        XCTAssertEqual(steps.status, 64, steps.stderr)
        XCTAssertEqual(steps.stderr, "stepctl: unknown command \"stpes\"; did you mean \"steps\"? (stepctl --help lists them)\n")
        let global = try runCommand(Binaries.stepctl, ["--socket", "/tmp/nowhere.sock", "histroy"])
        XCTAssertEqual(global.status, 64, global.stderr)
        XCTAssertTrue(global.stderr.contains("did you mean \"history\"?"), global.stderr)
        let far = try runCommand(Binaries.stepctl, ["frobnicate"])
        XCTAssertEqual(far.status, 64, far.stderr)
        XCTAssertTrue(far.stderr.contains("the commands are status, steps, reset, watch"), far.stderr)
        let analyse = try runCommand(Binaries.stepd, ["analyse", "x"])
        XCTAssertEqual(analyse.status, 64, analyse.stderr)
        XCTAssertEqual(analyse.stderr, "stepd: unknown command \"analyse\"; did you mean \"analyze\"? (stepd --help lists them)\n")
        // A command spelt right reaches its own checks: no daemon there (69), a file that is missing (66).
        XCTAssertEqual(try runCommand(Binaries.stepctl, ["--socket", "/tmp/nowhere.sock", "steps"]).status, 69)
        XCTAssertEqual(try runCommand(Binaries.stepd, ["analyze", "/nonexistent.csv"]).status, 66)
    }

    /// `stepctl watch` started before stepd (at boot, in another terminal) waits for it and prints its events;
    /// `--once` still exits with 69 at once.
    func testWatchStartedBeforeTheDaemonWaitsForIt() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let once = try runCommand(Binaries.stepctl, ["watch", "--once", "--socket", socket], timeout: 20)
        XCTAssertEqual(once.status, 69, once.stderr)
        let watcher = try RunningCommand(Binaries.stepctl, ["watch", "--json", "--socket", socket])
        defer { watcher.stop() }
        try pollUntil("watch to say it waits", timeout: 20, every: 0.05, detail: watcher.errors) {
            watcher.errors.contains("waiting for stepd to start (--once to exit instead)")
        }
        XCTAssertTrue(watcher.isRunning, watcher.errors)
        let daemon = try Daemon(arguments: replay, directory: directory)
        defer { daemon.terminate() }
        let events = try watcher.lines(2, timeout: 30)
        for line in events {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertNotNil(object["class"] as? String, line)
        }
        XCTAssertTrue(watcher.errors.contains("stepctl: connected to stepd\n"), watcher.errors)
        XCTAssertEqual(watcher.errors.components(separatedBy: "waiting for stepd").count - 1, 1, "said once: \(watcher.errors)")
    }

    /// `stepctl status` says who counts, and a barometer line only names a sensor when there is one: a
    /// replay without a pressure file, and IIO with an accelerometer but no barometer (stepd waits for one).
    func testStatusSaysWhoCountsAndNamesNoBarometerThatIsNotThere() throws {
        let daemon = try Daemon(arguments: replay)
        defer { daemon.terminate() }
        let status = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("counting: the step detector (accelerometer samples)\n"), status.stdout)
        XCTAssertTrue(status.stdout.contains("barometer: none (no floors)\n"), status.stdout)

        try FakeIIO.requireNamespaces()
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let device: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording, "trigger": true,
                                     "format": "le:s16/16>>0", "sampling_frequency_available": [25, 50, 62.5, 100, 200],
                                     "steps": Binaries.repository.appendingPathComponent("data/walk-inhand.steps.csv").path]
        let fake = try FakeIIO(devices: [device], command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"),
                                                             "--no-gps", "--sensor-step-counter"], directory: directory)
        let iio = FakeIIODaemon(socketPath: socket, fake: fake)
        try iio.waitForSocket()
        let raw = try iio.waitUntil(timeout: 30, "the sensor counter's mode") {
            (($0["steps"] as? [String: Any])?["sensor_counter"] as? String).map { $0 != "waiting" } ?? false
        }
        let iioStatus = try runCommand(Binaries.stepctl, ["--socket", socket, "status"])
        XCTAssertEqual(iioStatus.status, 0, iioStatus.stderr)
        XCTAssertTrue(iioStatus.stdout.contains("barometer: none found (no floors until one appears; --no-barometer stops the search)\n"),
                      iioStatus.stdout)
        XCTAssertFalse(iioStatus.stdout.contains("Hz, ") && iioStatus.stdout.contains("barometer: iio"), iioStatus.stdout)
        let counting = iioStatus.stdout.split(separator: "\n").first { $0.hasPrefix("counting: ") }.map(String.init) ?? ""
        let who = ((raw["steps"] as? [String: Any])?["counting"] as? String) == "sensor" ? "the sensor's own step counter" : "the step detector"
        XCTAssertTrue(counting.hasPrefix("counting: the"), iioStatus.stdout)
        XCTAssertTrue(counting.contains("sensor counter on") || counting.contains("sensor's own"), "\(counting) (\(who))")
        XCTAssertEqual(fake.terminate(), 0)
    }

    /// Pace as phones show it (min/km); the JSON keeps its seconds per metre.
    func testPaceIsPrintedInMinutesPerKilometre() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "10", "--no-gps"])
        defer { daemon.terminate() }
        try daemon.waitUntil(timeout: 60, "the replay to finish") { ($0["source"] as? [String: Any])?["state"] as? String == "finished" }
        let json = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "steps", "--json"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let secondsPerMeter = try XCTUnwrap(object["average_active_pace_s_per_m"] as? Double, json.stdout)
        let text = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "steps"]).stdout
        let seconds = Int((secondsPerMeter * 1000).rounded())
        XCTAssertTrue(text.contains(String(format: "average active pace %d:%02d min/km\n", seconds / 60, seconds % 60)), text)
        XCTAssertFalse(text.contains(" s/m"), text)
    }

    /// `time,x,y,z` is read as `t,x,y,z` (same count); Unix milliseconds get the hint to divide by 1000.
    func testAnalyzeTakesATimeHeaderAndHintsAtMilliseconds() throws {
        let directory = try TemporaryDirectory()
        let plain = try runCommand("/bin/sh", ["-c", "gzip -dc '\(Binaries.bundledRecording)'"]).stdout
        XCTAssertTrue(plain.hasPrefix("t,x,y,z\n"))
        let timeHeader = directory.file("time.csv")
        try ("time" + plain.dropFirst(1)).write(toFile: timeHeader, atomically: true, encoding: .utf8)
        let expected = try runCommand(Binaries.stepd, ["analyze", "--json", Binaries.bundledRecording])
        let got = try runCommand(Binaries.stepd, ["analyze", "--json", timeHeader])
        XCTAssertEqual(got.status, 0, got.stderr)
        func steps(_ text: String) -> Int? {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["steps"] as? Int
        }
        XCTAssertEqual(steps(got.stdout), steps(expected.stdout))
        XCTAssertGreaterThan(steps(got.stdout) ?? 0, 100)
        let milliseconds = directory.file("ms.csv")
        try "time,x,y,z\n1764300000000,0.1,0.2,9.8\n1764300000010,0.1,0.2,9.8\n".write(toFile: milliseconds, atomically: true, encoding: .utf8)
        let refused = try runCommand(Binaries.stepd, ["analyze", milliseconds])
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains(":2: expected a time t in seconds"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("the times look like milliseconds (or microseconds) since 1970: divide the first column by 1000"),
                      refused.stderr)
        // The command the hint gives makes the file readable.
        let fixed = directory.file("fixed.csv")
        let awk = try runCommand("/bin/sh", ["-c", "awk -F, -v OFS=, '$1+0==$1{$1=sprintf(\"%.3f\",$1/1000)}1' '\(milliseconds)' > '\(fixed)'"])
        XCTAssertEqual(awk.status, 0, awk.stderr)
        XCTAssertEqual(try runCommand(Binaries.stepd, ["analyze", fixed]).status, 0)
    }

    /// History older than retention_days removed at start is said in the log, with what and the key.
    func testPruningAtStartSaysWhatItRemoved() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try PreparedHistory.create(state: state, directory: directory)
        try PreparedHistory.fill(state: state, """
            old = now - 3 * 365 * 86400
            db.executemany("INSERT INTO track_point VALUES (?, ?, ?, ?, ?, ?, ?)",
                           ((old + i, 48.1, 11.5 + i * 1e-5, 520.0, 4.0, "3d", 9) for i in range(120)))
            db.executemany("INSERT OR IGNORE INTO minute_bin (minute, steps, distance_m) VALUES (?, 40, 28.0)",
                           ((int(old // 60) + m,) for m in range(3)))
            """)
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--no-gps", "--state-dir", state,
                                            "--retention-days", "30"], directory: directory)
        defer { daemon.terminate() }
        try pollUntil("the pruning to be logged", timeout: 20, every: 0.05, detail: daemon.log) { daemon.log.contains("store: removed") }
        XCTAssertTrue(daemon.log.contains("store: removed 3 minute bins and 120 track points older than 30 days (before "), daemon.log)
        try waitForLog("retention_days sets how long history is kept", in: { daemon.log })
        let track = try daemon.connect().request(["cmd": "track", "from": "2000-01-01T00:00:00Z"])
        XCTAssertEqual(track["points"] as? Int, 0, "the old points are gone, as said")
    }
}
