import Foundation
import StepProcessing
import StepProtocol
import XCTest

/// Every key docs/stepd.conf.example documents (it is generated from the option declarations), set in a
/// stepd.conf that the real daemon starts with and nothing on the command line, and each value seen to
/// take effect through STATUS or behaviour. A key documented without a check here fails the first test.
final class ConfigKeysTests: XCTestCase {
    /// Which test below sets and checks each key.
    private static let checkedKeys: [String: String] = [
        "socket": "replay", "state_dir": "replay", "retention_days": "replay", "detector": "replay", "height": "replay",
        "replay": "replay", "speed": "replay", "loop": "replay", "max_clients": "replay", "max_unsent_kib": "replay",
        "admin_group": "replay", "log_level": "replay", "gpsd": "replay", "gps_retry_s": "retry",
        "visit_min_stay_s": "replay", "no_gps": "sensor", "device": "sensor", "iio_uri": "sensor",
        "track_max_eph_m": "gps contrast", "visit_radius_m": "gps contrast", "demo": "demo",
        "max_clients_per_user": "connections", "reserved_clients": "connections", "max_requests_in_flight": "connections",
        // MQTTTests.testTLSWithATestCAClientCertificateAndPasswordFileFromStepdConf: a stepd.conf alone.
        "mqtt_url": "mqtt tls", "mqtt_device_id": "mqtt tls", "mqtt_topic_prefix": "mqtt tls", "mqtt_keepalive_s": "mqtt tls",
        "mqtt_ca_file": "mqtt tls", "mqtt_cert_file": "mqtt tls", "mqtt_key_file": "mqtt tls", "mqtt_username": "mqtt tls",
        "mqtt_password_file": "mqtt tls", "mqtt_homeassistant": "mqtt tls",
        "barometer": "sensor", "no_barometer": "no barometer", "sensor_step_counter": "sensor",
        "placement": "placement", "units": "units",
    ]

    static func documentedKeys() throws -> Set<String> {
        let example = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/stepd.conf.example"), encoding: .utf8)
        return Set(example.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("#"), let equals = line.range(of: " = ") else { return nil }
            let key = line[line.index(after: line.startIndex)..<equals.lowerBound]
            return key.allSatisfy { $0.isLowercase || $0 == "_" } ? String(key) : nil
        })
    }

    func testEveryDocumentedKeyHasACheck() throws {
        XCTAssertEqual(try Self.documentedKeys(), Set(Self.checkedKeys.keys),
                       "a key of stepd.conf.example has no check in ConfigKeysTests, or a checked key is no longer documented")
    }

    /// Starts stepd with `--config FILE` alone (no --socket: the file's socket must be used).
    private func start(_ settings: [String: String], directory: TemporaryDirectory) throws -> (Process, String, String) {
        let config = directory.file("stepd-\(UUID().uuidString.prefix(4)).conf")
        try settings.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: "\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let log = config + ".log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.stepd)
        process.arguments = ["--config", config]
        process.environment = ProcessInfo.processInfo.environment.merging(["INVOCATION_ID": "", "JOURNAL_STREAM": ""]) { $1 }
        let output = FileHandle(forWritingAtPath: log)  // one offset for both, so neither overwrites the other
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return (process, settings["socket"] ?? "", log)
    }

    private func connect(_ socket: String, process: Process, log: String) throws -> SocketClient {
        func text() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        return try pollFor("stepd to listen on the configured socket \(socket)", timeout: 20, every: 0.02, detail: text()) {
            if let client = try? SocketClient(path: socket) { return client }
            guard process.isRunning else { throw ProcessExited(what: "stepd", log: text()) }
            return nil
        }
    }

    private func poll(_ client: SocketClient, timeout: TimeInterval, _ what: String,
                      _ condition: ([String: Any]) throws -> Bool) throws -> [String: Any] {
        var status: [String: Any] = [:]
        return try pollFor(what, timeout: timeout, detail: "last STATUS: \(status)") {
            status = try client.request(["cmd": "status"])
            return try condition(status) ? status : nil
        }
    }

    private func stop(_ process: Process) {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }

    private func gps(_ status: [String: Any]) -> [String: Any] { status["gps"] as? [String: Any] ?? [:] }

    /// Every key but the sensor's and two GPS ones, which need a daemon of their own (a --device wins over
    /// --replay; track_max_eph_m and visit_radius_m are shown by contrast).
    func testAFileWithEveryReplayKeyTakesEffect() throws {
        try GPSDFake.requireTools()
        let directory = try TemporaryDirectory()
        let analysis = try runCommand(Binaries.stepd, ["analyze", "--json", Binaries.bundledRecording])
        let recording = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(analysis.stdout.utf8)) as? [String: Any])
        let samples = try XCTUnwrap(recording["samples"] as? Int)
        let duration = try XCTUnwrap((recording["duration_s"] as? NSNumber)?.doubleValue)
        let (log, _) = try NMEAWalk.generate(["--jitter-m", "3", "walk:120", "stay:90", "walk:60"], into: directory, name: "stay")
        let port = GPSDFake.freePort()
        // gpsd first, so that the daemon's first connection finds it and reads the whole log.
        let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.01, directory: directory)
        defer { fake.stop() }
        let socket = directory.file("conf.sock")
        let (process, _, logPath) = try start([
            "socket": socket, "state_dir": directory.file("state"), "retention_days": "12", "detector": "threshold",
            "height": "1.90", "replay": Binaries.bundledRecording, "speed": "50", "loop": "true", "max_clients": "3",
            // One slot kept for root, not the default's two of three: the admin group's reset below takes an open one.
            "reserved_clients": "1", "max_unsent_kib": "1", "admin_group": "users", "log_level": "debug", "gpsd": "127.0.0.1:\(port)",
            "visit_min_stay_s": "60",
        ], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)

        let status = try client.request(["cmd": "status"])
        XCTAssertEqual(status["detector"] as? String, "threshold", "detector")
        let store = status["store"] as? [String: Any] ?? [:]
        XCTAssertEqual(store["retention_days"] as? Int, 12, "retention_days")
        XCTAssertTrue((store["path"] as? String ?? "").hasPrefix(directory.file("state") + "/"), "state_dir: \(store)")
        let source = status["source"] as? [String: Any] ?? [:]
        XCTAssertEqual(source["kind"] as? String, "replay", "replay")
        XCTAssertTrue((source["description"] as? String ?? "").contains("walk-inhand"), "replay: \(source)")
        XCTAssertEqual(gps(status)["gpsd"] as? String, "127.0.0.1:\(port)", "gpsd")

        // speed and loop: more samples than the recording holds, sooner than a fifth of its length.
        _ = try poll(client, timeout: duration / 5, "samples beyond the recording's \(samples) at speed 50, looping") {
            ($0["samples_in"] as? Int ?? 0) > samples * 3 / 2
        }
        let stride = try client.request(["cmd": "steps"])["stride_m"] as? Double ?? 0
        XCTAssertEqual(stride, 0.414 * 1.90, accuracy: 0.001, "height")

        // max_clients = 3: this client and two more are served, the fourth is refused.
        let held = try (0..<2).map { _ in try SocketClient(path: socket) }
        let refused = try SocketClient(path: socket, readVersion: false)
        XCTAssertTrue((try refused.readObject()["message"] as? String ?? "").contains("too many clients"), "max_clients")
        held.forEach { $0.close() }

        // max_unsent_kib = 1: a watcher that never reads is dropped.
        _ = try poll(client, timeout: 5, "the held clients to leave") { ($0["clients"] as? Int ?? 9) <= 1 }
        let sleeper = try SocketClient(path: socket)
        try sleeper.sendLine(#"{"cmd":"watch","enable":true,"classes":["MOTION","STEP","PEDOMETER"],"rate_hz":60}"#)
        _ = try poll(client, timeout: 90, "the unread watcher to be dropped") { ($0["dropped_watchers"] as? Int ?? 0) >= 1 }

        // admin_group = users: a member of group users (gid 100) may reset, nobody else.
        if getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            chmod(socket, 0o666)
            let member = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--groups=100",
                                                            Binaries.stepctl, "reset", "--socket", socket])
            XCTAssertEqual(member.status, 0, "admin_group: \(member.stderr)")
            let stranger = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                              Binaries.stepctl, "reset", "--socket", socket])
            XCTAssertNotEqual(stranger.status, 0, "admin_group: a non-member reset")
        }

        // visit_min_stay_s = 60: a 90 s stay (under the 300 s default) makes a visit.
        _ = try poll(client, timeout: 60, "a visit from a 90 s stay") { _ in
            !((try client.request(["cmd": "visits"])["visits"] as? [Any]) ?? []).isEmpty
        }

        // log_level = debug.
        try waitForLog(" debug stepd: source choice: ", in: { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" })
    }

    /// device and iio_uri name a sensor that is not there: the daemon reads (waits for) it, not a recording;
    /// no_gps = true leaves gpsd alone.
    func testSensorKeysAndNoGPSTakeEffect() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("sensor.sock")
        let (process, _, logPath) = try start([
            "socket": socket, "state_dir": directory.file("state"), "device": "no-such-accel",
            "iio_uri": "local:", "no_gps": "true", "barometer": "no-such-baro", "sensor_step_counter": "true",
        ], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)
        let status = try client.request(["cmd": "status"])
        let source = status["source"] as? [String: Any] ?? [:]
        XCTAssertTrue((source["kind"] as? String ?? "").hasPrefix("iio"), "device/iio_uri: \(source)")
        XCTAssertTrue("\(source)".contains("no-such-accel"), "device: \(source)")
        // sensor_step_counter = true: asked for, no device read yet (SensorStepCounterTests shows it at work).
        _ = try poll(client, timeout: 10, "sensor_step_counter: the mode waiting for a device") { status in
            (status["steps"] as? [String: Any])?["sensor_counter"] as? String == "waiting"
        }
        XCTAssertEqual(gps(status)["state"] as? String, "unavailable", "no_gps")
        XCTAssertTrue((gps(status)["error"] as? String ?? "").lowercased().contains("disabled"), "no_gps: \(gps(status))")
        let barometer = try poll(client, timeout: 10, "the barometer waiting") { status in
            (status["barometer"] as? [String: Any])?["state"] as? String == "waiting"
        }["barometer"] as? [String: Any] ?? [:]
        XCTAssertEqual(barometer["description"] as? String, "iio no-such-baro", "barometer: \(barometer)")
    }

    /// units = g: the bundled walk written in g replays to the walk's count, said in the log as read in g by
    /// the setting (no notice of a guess); units = mps2 takes the same file as m/s², a tenth of a walk.
    func testUnitsKeyTakesEffect() throws {
        let directory = try TemporaryDirectory()
        let g = standardGravity
        let inG = try rewrittenBundledWalk("in-g.csv", in: directory) { t, x, y, z in "\(t),\(x / g),\(y / g),\(z / g)" }
        let offline = try runCommand(Binaries.stepd, ["analyze", "--json", Binaries.bundledRecording])
        let walk = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(offline.stdout.utf8)) as? [String: Any])?["steps"] as? Int)
        var counts: [String: Int] = [:]
        for units in ["g", "mps2"] {
            let socket = directory.file("\(units).sock")
            let (process, _, logPath) = try start([
                "socket": socket, "state_dir": directory.file("state-\(units)"), "no_gps": "true", "replay": inG, "speed": "40", "units": units,
            ], directory: directory)
            defer { stop(process) }
            let client = try connect(socket, process: process, log: logPath)
            _ = try poll(client, timeout: 60, "the replay to finish") { ($0["source"] as? [String: Any])?["state"] as? String == "finished" }
            counts[units] = try client.request(["cmd": "steps"])["steps"] as? Int
            XCTAssertFalse(try String(contentsOfFile: logPath, encoding: .utf8).contains("look like g"), "a unit given is not guessed")
        }
        XCTAssertEqual(counts["g"], walk)
        XCTAssertLessThan(try XCTUnwrap(counts["mps2"]), walk / 2)
    }

    /// no_barometer = true: no barometer is looked for, STATUS says so.
    func testNoBarometerKeyTakesEffect() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("nobaro.sock")
        let (process, _, logPath) = try start([
            "socket": socket, "state_dir": directory.file("state"), "no_gps": "true", "no_barometer": "true",
        ], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)
        let barometer = try poll(client, timeout: 10, "the barometer unavailable") { status in
            (status["barometer"] as? [String: Any])?["state"] as? String == "unavailable"
        }["barometer"] as? [String: Any] ?? [:]
        XCTAssertEqual(barometer["error"] as? String, "barometer disabled (--no-barometer)", "no_barometer: \(barometer)")
    }

    /// placement = waist: a lower-back walk replayed from the file alone gives its bout the waist's measures, step
    /// length and speed (docs/gait.md), which `auto` never gives; read from the history once the replay has ended.
    func testPlacementKeyGivesAWaistBoutItsLengthAndSpeed() throws {
        let trial = try Binaries.sharedData("steps/lowerback-turns/s05_t4/accel.csv.gz")
        let directory = try TemporaryDirectory()
        let socket = directory.file("placement.sock")
        let (process, _, logPath) = try start([
            "socket": socket, "state_dir": directory.file("state"), "no_gps": "true", "no_barometer": "true",
            "replay": trial.path, "speed": "10", "placement": "waist",
        ], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)
        let from = Timestamp.string(Date().addingTimeInterval(-3600))
        let bouts = try pollFor("the replayed walk's bout in the history", timeout: 60, every: 0.2) { () -> [[String: Any]]? in
            let bouts = try client.request(["cmd": "history", "from": from, "bouts": true])["bouts"] as? [[String: Any]] ?? []
            return bouts.isEmpty ? nil : bouts
        }
        let bout = try XCTUnwrap(bouts.first)
        XCTAssertEqual(bout["placement"] as? String, "waist", "placement: \(bout)")
        XCTAssertNotNil(bout["step_length_m"] as? Double, "placement: \(bout)")
        XCTAssertNotNil(bout["speed_mps"] as? Double, "placement: \(bout)")
    }

    /// max_clients_per_user, reserved_clients and max_requests_in_flight, with clients of other users (setpriv):
    /// of 11 slots 4 are kept, so beside root's one two users get 3 each, a third none, and root still gets in; a non-reading
    /// client with more than 2 requests waiting is closed, the log naming the limit.
    func testConnectionLimitKeysTakeEffect() throws {
        try Unprivileged.requireTools()
        let directory = try TemporaryDirectory()
        let socket = directory.file("limits.sock")
        let (process, _, logPath) = try start([
            "socket": socket, "state_dir": directory.file("state"), "replay": Binaries.bundledRecording, "loop": "true",
            "no_gps": "true", "max_clients": "11", "max_clients_per_user": "3", "reserved_clients": "4",
            "max_requests_in_flight": "2",
        ], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)
        chmod(socket, 0o666)
        chmod(directory.path, 0o755)
        let nobody = try Unprivileged.Running(["idle", socket, "10"])
        defer { nobody.finish() }
        XCTAssertEqual(try nobody.readObject()["connected"] as? Int, 3, "max_clients_per_user")
        let daemonUser = try Unprivileged.Running(["idle", socket, "10"], uid: 1)
        defer { daemonUser.finish() }
        XCTAssertEqual(try daemonUser.readObject()["connected"] as? Int, 3, "max_clients_per_user")
        let third = try Unprivileged.Running(["idle", socket, "10"], uid: 2)
        defer { third.finish() }
        XCTAssertEqual(try third.readObject()["connected"] as? Int, 0, "reserved_clients: 1 (root) + 3 + 3 of 11, 4 kept")
        XCTAssertEqual(try client.request(["cmd": "status"])["class"] as? String, "STATUS", "root keeps its slot")
        nobody.finish()
        _ = try poll(client, timeout: 10, "nobody's idle connections to close") { ($0["clients"] as? Int ?? 99) <= 7 }
        let result = try Unprivileged.runHostile(["pipeline", socket, "1", "5"])
        XCTAssertEqual(result["connected"] as? Int, 1, "\(result)")
        _ = try poll(client, timeout: 20, "the pipelining client to be closed") { ($0["closed_clients"] as? Int ?? 0) >= 1 }
        // max_requests_in_flight: the reason is logged.
        try waitForLog("more than 2 requests waiting", in: { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" })
    }

    /// demo = true: the bundled recording plays as a demo, and the configured state directory stays untouched.
    func testDemoKeyPlaysTheBundledRecordingWithAThrowawayHistory() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("demo.sock")
        let state = directory.file("state")
        let (process, _, logPath) = try start(["socket": socket, "state_dir": state, "demo": "true", "speed": "20",
                                               "no_gps": "true"], directory: directory)
        defer { stop(process) }
        let client = try connect(socket, process: process, log: logPath)
        let status = try poll(client, timeout: 30, "demo steps") { _ in
            (try client.request(["cmd": "steps"])["steps"] as? Int ?? 0) > 0
        }
        let source = status["source"] as? [String: Any] ?? [:]
        XCTAssertEqual(source["demo"] as? Bool, true, "demo: \(source)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: state + "/stepd.sqlite"), "demo: the configured history was written")
    }

    /// track_max_eph_m and visit_radius_m, each against the same receiver log: an eph limit under the
    /// log's error keeps every fix out of the track; a radius under the jitter makes no visit.
    func testTrackAndVisitLimitsTakeEffect() throws {
        try GPSDFake.requireTools()
        let directory = try TemporaryDirectory()
        // --hdop 0.9 gives eph 17.1 m (gpsd: 19 m × HDOP); the stay jitters by 3 m.
        let (log, _) = try NMEAWalk.generate(["--hdop", "0.9", "--jitter-m", "3", "walk:120", "stay:90", "walk:60"],
                                             into: directory, name: "limits")
        for (name, settings) in [("eph", ["track_max_eph_m": "10"]), ("radius", ["visit_radius_m": "1"])] {
            let port = GPSDFake.freePort()
            // gpsd first, holding the log back (stepped) until the daemon watches. Started after the daemon, gpsd
            // came up 6-13 s late under load; the daemon's retry had doubled from 0.1 s to 6.4 s by then (as
            // documented), and the 1.3 s log had played before it connected.
            let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.002, stepped: true, directory: directory)
            defer { fake.stop() }
            let socket = directory.file("\(name).sock")
            let (process, _, logPath) = try start(settings.merging([
                "socket": socket, "state_dir": directory.file("state-\(name)"), "gpsd": "127.0.0.1:\(port)",
                "gps_retry_s": "0.1", "visit_min_stay_s": "60", "replay": Binaries.bundledRecording, "loop": "true",
            ]) { $1 }, directory: directory)
            defer { stop(process) }
            let client = try connect(socket, process: process, log: logPath)
            _ = try poll(client, timeout: 30, "the daemon to watch gpsd") { (self.gps($0)["connections"] as? Int ?? 0) >= 1 }
            try fake.play()
            // The log has about 220 fixes (1 Hz: 86 s, 90 s, 43 s); wait for most of them.
            _ = try poll(client, timeout: 60, "the log's fixes") { (self.gps($0)["fixes_accepted"] as? Int ?? 0) >= 200 }
            let track = try client.request(["cmd": "track"])
            let visits = try client.request(["cmd": "visits"])["visits"] as? [Any] ?? []
            if name == "eph" {
                XCTAssertEqual(track["points"] as? Int, 0, "track_max_eph_m = 10 with eph 17.1 m: \(track)")
            } else {
                XCTAssertGreaterThan(track["points"] as? Int ?? 0, 100, "visit_radius_m run: the track itself fills")
                XCTAssertTrue(visits.isEmpty, "visit_radius_m = 1 with 3 m of jitter: \(visits)")
            }
        }
    }

    /// gps_retry_s = 30 against the default 2 s: both daemons miss a gpsd that is not up yet; once it is,
    /// the one with the default finds it while the other still waits for its first retry.
    func testGPSRetryDelayTakesEffect() throws {
        try GPSDFake.requireTools()
        let directory = try TemporaryDirectory()
        let (log, _) = try NMEAWalk.generate(["walk:100"], into: directory, name: "retry")
        let port = GPSDFake.freePort()
        var clients: [SocketClient] = []
        var processes: [Process] = []
        defer { processes.forEach(stop) }
        for (name, retry) in [("slow", "30"), ("default", "2")] {
            let socket = directory.file("\(name).sock")
            let (process, _, logPath) = try start([
                "socket": socket, "state_dir": directory.file("state-\(name)"), "gpsd": "127.0.0.1:\(port)",
                "gps_retry_s": retry, "replay": Binaries.bundledRecording,
            ], directory: directory)
            processes.append(process)
            let client = try connect(socket, process: process, log: logPath)
            _ = try poll(client, timeout: 10, "the first attempt to fail") { self.gps($0)["state"] as? String == "unavailable" }
            clients.append(client)
        }
        // 0.05 s a sentence: the log lasts long enough for the default retry (2 s, then 4 s) to find it.
        let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.05, directory: directory)
        defer { fake.stop() }
        _ = try poll(clients[1], timeout: 15, "the default retry to find gpsd") { (self.gps($0)["connections"] as? Int ?? 0) >= 1 }
        let slow = try clients[0].request(["cmd": "status"])
        XCTAssertEqual(gps(slow)["connections"] as? Int, 0, "gps_retry_s = 30 retried early: \(gps(slow))")
    }

    /// A stepd.conf saved with CRLF line ends starts the daemon as the same file with LF would: the socket
    /// and every other value read without the \r.
    func testAFileWithCRLFLineEndsIsRead() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("crlf.sock")
        let config = directory.file("stepd.conf")
        // No comment first: read as one line, the file would be one comment and the daemon would start with the
        // defaults (/run/stepd, /var/lib/stepd); this way it is refused instead.
        try ["detector = threshold", "socket = \(socket)", "state_dir = \(directory.file("state"))", "# saved on Windows",
             "replay = \(Binaries.bundledRecording)", "height = 1.90", "log_level = debug", ""]
            .joined(separator: "\r\n").write(toFile: config, atomically: true, encoding: .utf8)
        let log = directory.file("crlf.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.stepd)
        process.arguments = ["--config", config]
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = process.standardOutput
        try process.run()
        defer { stop(process) }
        let client = try connect(socket, process: process, log: log)
        let status = try client.request(["cmd": "status"])
        XCTAssertEqual(status["detector"] as? String, "threshold")
        XCTAssertTrue(((status["store"] as? [String: Any])?["path"] as? String ?? "").hasPrefix(directory.file("state") + "/"), "\(status)")
        XCTAssertEqual(try client.request(["cmd": "steps"])["stride_m"] as? Double ?? 0, 0.414 * 1.90, accuracy: 0.001)
    }

    /// Malformed gpsd addresses and values longer than their documented maximum are refused at start with the
    /// file's line (78) or as a bad command line (64), in one readable line; none is tried for ever.
    func testMalformedAddressesAndOverlongValuesAreRefusedAtStart() throws {
        let directory = try TemporaryDirectory()
        let base = ["--state-dir", directory.file("state")]
        func stepd(_ arguments: [String]) throws -> CommandResult {
            try runCommand(Binaries.stepd, arguments, timeout: 15)
        }
        let long = String(repeating: "x", count: 100_000)
        let cases: [(key: String, value: String, says: String)] = [
            ("gpsd", "[::1", "no ] closes the IPv6 address"), ("gpsd", "[::1]x", "after ] comes :PORT"),
            ("gpsd", "host:", "the port after the colon is missing"), ("gpsd", ":2947", "the host before the colon is missing"),
            ("gpsd", "host:99999", "from 1 to 65535"), ("gpsd", "host:80:extra", "more than one colon"),
            ("gpsd", "\"\"", "it is empty"),
            ("device", long, "at most 4095 bytes"), ("mqtt_topic_prefix", long, "at most 4095 bytes"),
            ("replay", long, "at most 4095 bytes"), ("socket", "/tmp/" + String(repeating: "s", count: 120), "at most 107 bytes"),
        ]
        for (index, item) in cases.enumerated() {
            let config = directory.file("bad-\(index).conf")
            var lines = ["# a bad value on line 3", "log_level = info", "\(item.key) = \(item.value)"]
            if item.key != "socket" { lines.append("socket = \(directory.file("s.sock"))") }
            try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
            let fromFile = try stepd(["--config", config] + base)
            XCTAssertEqual(fromFile.status, 78, "\(item.key) = \(item.value.prefix(40)): \(fromFile.stderr.prefix(300))")
            XCTAssertTrue(fromFile.stderr.contains("\(config):3: key \"\(item.key)\": expected") && fromFile.stderr.contains(item.says),
                          String(fromFile.stderr.prefix(400)))
            XCTAssertLessThan(fromFile.stderr.utf8.count, 1000, "one readable line")
            let value = item.value == "\"\"" ? "" : item.value
            var arguments = ["--replay", Binaries.bundledRecording, "--\(item.key.replacingOccurrences(of: "_", with: "-"))", value] + base
            if item.key != "socket" { arguments += ["--socket", directory.file("s.sock")] }
            let flag = try stepd(arguments)
            XCTAssertEqual(flag.status, 64, "--\(item.key) \(item.value.prefix(40)): \(flag.stderr.prefix(300))")
            XCTAssertTrue(flag.stderr.contains(item.says), String(flag.stderr.prefix(400)))
            XCTAssertLessThan(flag.stderr.utf8.count, 2000, "a short message, not the value")
        }
    }

    /// A mistyped key gets the known key it is nearest to, as a mistyped flag does on the command line; one
    /// near nothing gets the list.
    func testAMistypedKeyGetsTheNearestKnownOne() throws {
        let directory = try TemporaryDirectory()
        for (typed, meant) in [("retension_days", "retention_days"), ("max-clients", "max_clients"),
                               ("retention", "retention_days"), ("loglevel", "log_level")] {
            let (process, _, log) = try start([typed: "4", "replay": Binaries.bundledRecording], directory: directory)
            process.waitUntilExit()
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            XCTAssertEqual(process.terminationStatus, 78, text)
            XCTAssertTrue(text.contains("unknown key \"\(typed)\"; did you mean \"\(meant)\"?"), text)
        }
        let (process, _, log) = try start(["colour": "blue", "replay": Binaries.bundledRecording], directory: directory)
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 78, text)
        XCTAssertTrue(text.contains("unknown key \"colour\"; known keys: socket, "), text)
        XCTAssertFalse(text.contains("did you mean"), text)
    }
}
