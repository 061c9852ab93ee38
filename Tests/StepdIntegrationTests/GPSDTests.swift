import Foundation
import Locking
import XCTest
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Position through a real gpsd: gpsfake replays NMEA logs into gpsd on a loopback port, the built
/// stepd reads it through libgps.
final class GPSDTests: XCTestCase {
    override func setUpWithError() throws {
        try GPSDFake.requireTools()
    }

    private static func startDaemon(port: Int, directory: TemporaryDirectory, extra: [String] = []) throws -> Daemon {
        // A short first retry keeps the tests quick; the 2 s default is the same code path.
        try Daemon(arguments: ["--gpsd", "127.0.0.1:\(port)", "--gps-retry-s", "0.2"] + extra, directory: directory)
    }

    /// The POSITION reply, read directly: SocketClient.request skips POSITION lines as pushed events, and
    /// a connection that watches nothing receives only replies.
    private static func position(_ daemon: Daemon) throws -> [String: Any] {
        let client = try daemon.connect()
        try client.sendLine("{\"cmd\":\"position\"}")
        return try client.readObject()
    }

    private static func gps(_ status: [String: Any]) -> [String: Any] { status["gps"] as? [String: Any] ?? [:] }

    // MARK: Real receiver logs

    func testLastPositionEqualsTheLastTPVGpsdSendsAWatcherForRealLogs() throws {
        // Every receiver log in the shared data: SiRF, u-blox, MediaTek, Quectel, ST, Meinberg and others, some
        // without an error estimate or an altitude (2D fixes), which the daemon must leave out as gpsd does.
        // Each log has a gpsd, a daemon and a watcher of its own, so four replay at once: gpsfake's pace, not
        // the CPU, is what each one waits for.
        let names = ["bu353s4.log", "haicom-305N.log", "iTrek.log", "meinberg-gps164.log", "mt3339.log", "neo-m8n.log",
                     "nmea-rtk.log", "quectel-l76k-nmea.log", "rx210.log", "sirfstarv-nmea.log", "st-teseo-liv3f.log"]
        // Resolved here, on the test's thread: a missing shared folder skips the test (thrown from a worker
        // thread, the skip would be caught below and reported as a failure).
        let logs = try names.map { try Binaries.sharedData("gps/\($0)").path }
        let problems = ProblemList()
        let slots = DispatchSemaphore(value: 4)
        let group = DispatchGroup()
        for (name, log) in zip(names, logs) {
            slots.wait()
            group.enter()
            Thread.detachNewThread {
                defer { slots.signal(); group.leave() }
                do {
                    problems.add(try Self.replayRealLog(name, log: log))
                } catch {
                    problems.add(["\(name): \(error)"])
                }
            }
        }
        group.wait()
        for problem in problems.all { XCTFail(problem) }
    }

    private static let processes = NSLock()

    /// Replays one receiver log; returns what differs between the daemon's last fix and gpsd's last TPV.
    private static func replayRealLog(_ name: String, log: String) throws -> [String] {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        // Foundation's Process on Linux creates each thread's run loop without a lock (run, waitUntilExit):
        // two threads starting or reaping processes at once can crash in CFRunLoop, so they take turns.
        // gpsfake holds the log back (stepped) until the daemon and the reference watcher both watch: some logs
        // have their only fixes in their first quarter second (meinberg-gps164: 23 sentences, then no fix),
        // which a watcher connecting a moment late under load missed.
        let (fake, daemon) = try Self.processes.withLock {
            _ = RunLoop.current
            let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.01, stepped: true, directory: directory)
            return (fake, try Self.startDaemon(port: port, directory: directory))
        }
        defer { Self.processes.withLock { fake.stop(); daemon.terminate() } }
        try daemon.waitUntil(timeout: 30, "gpsd connected") { (Self.gps($0)["connections"] as? Int ?? 0) >= 1 }
        let pipe = try GPSDWatcher(port: port, directory: directory)
        try pipe.waitForWatch()
        // One line written to gpsfake per line of the log (bytes: a CRLF log's "\r\n" is one Character).
        let lines = try Data(contentsOf: URL(fileURLWithPath: log)).filter { $0 == 0x0A }.count
        fake.send(sentences: lines + 1)
        // Some logs open with seconds of no-fix sentences; four replays and a build on two cores can pause
        // gpsfake for a second, so the log counts as played once a fix came and then 2 s of quiet.
        func hasPosition(_ tpv: [String: Any]) -> Bool { (tpv["mode"] as? Int ?? 0) >= 2 && tpv["lat"] != nil && tpv["time"] != nil }
        let tpvs = pipe.waitUntilQuiet(quietSeconds: 2) { $0.contains(where: hasPosition) }
        let positioned = tpvs.filter(hasPosition)
        guard let last = positioned.last else { return ["\(name): gpsd sent no TPV with a position"] }
        var p: [String: Any] = [:]
        do {
            try pollUntil("the daemon's last fix to be gpsd's", timeout: 20) {
                p = try Self.position(daemon)
                return p["time"] as? String == last["time"] as? String
            }
        } catch is WaitTimedOut {
            return ["\(name): the daemon's last fix is at \(p["time"] ?? "null"), gpsd's at \(last["time"] ?? "null")\n\(daemon.log)"]
        }
        var problems: [String] = []
        func same(_ ours: Any?, _ gpsd: Any?, accuracy: Double, _ field: String) {
            switch (ours as? Double, gpsd as? Double) {
            case let (a?, b?) where abs(a - b) <= accuracy: break
            case (nil, nil): break
            case let (a, b): problems.append("\(name): \(field): stepd \(a.map { "\($0)" } ?? "null"), gpsd \(b.map { "\($0)" } ?? "absent")")
            }
        }
        same(p["lat"], last["lat"], accuracy: 1e-7, "lat")
        same(p["lon"], last["lon"], accuracy: 1e-7, "lon")
        if p["lat"] == nil || p["lon"] == nil { problems.append("\(name): no lat/lon in POSITION") }
        same(p["eph_m"], last["eph"], accuracy: 0.1, "eph")
        same(p["alt_msl_m"], last["altMSL"], accuracy: 0.01, "altMSL")
        let mode = (last["mode"] as? Int) == 3 ? "3d" : "2d"
        if p["mode"] as? String != mode { problems.append("\(name): mode \(p["mode"] ?? "null"), gpsd \(mode)") }
        let status = try daemon.connect().request(["cmd": "status"])
        if Self.gps(status)["state"] as? String != "fix" { problems.append("\(name): gps.state \(Self.gps(status)["state"] ?? "null")") }
        return problems
    }

    func testStationaryRealLogAddsUnderFiveMetres() throws {
        let log = try Binaries.sharedData("gps/bu353s4.log").path
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        // gpsd first, the log held back until the daemon and the reference watcher both watch.
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        let daemon = try Self.startDaemon(port: port, directory: directory)
        let pipe = try GPSDWatcher(port: port, directory: directory)
        try pipe.waitForWatch()
        try fake.play(once: daemon)
        _ = pipe.waitUntilQuiet()
        let track = try daemon.connect().request(["cmd": "track"])
        XCTAssertEqual(track["class"] as? String, "TRACK")
        XCTAssertGreaterThan(track["points"] as? Int ?? 0, 10)
        XCTAssertLessThan(track["distance_m"] as? Double ?? .infinity, 5)
        fake.stop()
    }

    // MARK: The state STATUS reports

    func testConnectedWithoutAFixSaysNoFixWithoutAConnectionError() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        // gpsd up, the receiver silent: nothing sent until told. (A generated log, so that a clean clone runs this.)
        let (log, _) = try NMEAWalk.generate(["walk:200"], into: directory, name: "silent")
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        defer { fake.stop() }
        let daemon = try Self.startDaemon(port: port, directory: directory)
        try daemon.waitUntil(timeout: 20, "gpsd connected") { (Self.gps($0)["connections"] as? Int ?? 0) >= 1 }
        let status = Self.gps(try daemon.connect().request(["cmd": "status"]))
        XCTAssertEqual(status["state"] as? String, "no_fix")
        XCTAssertNil(status["error"], "connected, and no failure yet: \(status)")
        let line = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "status"], timeout: 20).stdout
        let gpsLine = line.split(separator: "\n").first { $0.hasPrefix("gps:") }.map(String.init) ?? ""
        XCTAssertTrue(gpsLine.hasPrefix("gps:      no_fix via gpsd 127.0.0.1:\(port), 0 fixes"), gpsLine)
        XCTAssertFalse(gpsLine.contains("not connected"), gpsLine)
    }

    func testAReceiverThatGoesQuietTurnsStaleAfterTenSecondsWhileGpsdStaysConnected() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        let (log, _) = try NMEAWalk.generate(["walk:200"], into: directory, name: "quiet")
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        defer { fake.stop() }
        let daemon = try Self.startDaemon(port: port, directory: directory)
        try daemon.waitUntil(timeout: 20, "gpsd connected") { (Self.gps($0)["connections"] as? Int ?? 0) >= 1 }
        // Ten epochs of the log (GGA, GSA, RMC each), then silence.
        fake.send(sentences: 30)
        try daemon.waitUntil(timeout: 20, "a fix") { Self.gps($0)["state"] as? String == "fix" }
        let fixed = Date()
        try daemon.waitUntil(timeout: 30, "stale") { Self.gps($0)["state"] as? String == "stale" }
        XCTAssertGreaterThan(Date().timeIntervalSince(fixed), 8, "stale too early")
        let status = Self.gps(try daemon.connect().request(["cmd": "status"]))
        XCTAssertEqual(status["connections"] as? Int, 1, "gpsd stayed connected")
        XCTAssertGreaterThanOrEqual(status["last_fix_age_s"] as? Double ?? 0, 10)
        let line = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "status"], timeout: 20).stdout
        XCTAssertTrue(line.contains("gps:      stale via gpsd"), line)
        // The journal says each change once (docs/gps.md): fix, then stale, then fix again when the receiver
        // speaks; STATUS asked many times meanwhile adds nothing.
        try pollUntil("the log to say stale", timeout: 10, every: 0.1, detail: daemon.log) { daemon.log.contains("gps: stale") }
        fake.send(sentences: 30)
        try daemon.waitUntil(timeout: 20, "a fix again") { Self.gps($0)["state"] as? String == "fix" }
        try pollUntil("the log to say fix again", timeout: 10, every: 0.1, detail: daemon.log) {
            daemon.log.components(separatedBy: "gps: fix").count - 1 == 2
        }
        let states = daemon.log.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "gps: ") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != ":" && $0 != " " })
        }
        XCTAssertEqual(states.filter { $0 != "unavailable" }, ["no_fix", "fix", "stale", "fix"], daemon.log)
    }

    /// A receiver whose fixes are all less certain than track_max_eph_m (HDOP 2: gpsd's eph 38 m, over the
    /// default 25 m) leaves the path empty; `stepctl track` says how many fixes were kept out and the key.
    func testAnEmptyTrackSaysHowManyFixesWereOverTheEphLimit() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        let (log, _) = try NMEAWalk.generate(["--hdop", "2", "walk:60"], into: directory, name: "uncertain")
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        defer { fake.stop() }
        let daemon = try Self.startDaemon(port: port, directory: directory)
        try fake.play(once: daemon)
        let status = try daemon.waitUntil(timeout: 30, "fixes over the limit") { (Self.gps($0)["fixes_over_max_eph"] as? Int ?? 0) >= 5 }
        XCTAssertEqual(Self.gps(status)["track_max_eph_m"] as? Double, 25)
        let track = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "track"], timeout: 20)
        XCTAssertEqual(track.status, 0, track.stderr)
        XCTAssertTrue(track.stdout.hasPrefix("no track yet: "), track.stdout)
        XCTAssertTrue(track.stdout.contains("fixes were less certain than track_max_eph_m (eph over 25 m)"), track.stdout)
        XCTAssertTrue(track.stdout.contains("raise track_max_eph_m in stepd.conf (or --track-max-eph-m)"), track.stdout)
        XCTAssertEqual(try daemon.connect().request(["cmd": "track"])["points"] as? Int, 0)
    }

    func testSatellitesUsedAreTheEpochsForTheQuectelLog() throws {
        // gpsd sends two SKYs an epoch for this receiver (GPS and BeiDou, then all); the fix counts the epoch's.
        let log = try Binaries.sharedData("gps/quectel-l76k-nmea.log").path
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.01, stepped: true, directory: directory)
        defer { fake.stop() }
        let daemon = try Self.startDaemon(port: port, directory: directory)
        try fake.play(once: daemon)
        var p: [String: Any] = [:]
        try pollUntil("a 3D fix", timeout: 30, detail: "\(p)") {
            p = try Self.position(daemon)
            return p["mode"] as? String == "3d"
        }
        // gpsd's SKYs of each epoch mark 12 satellites used (9 in the first, 12 in the second).
        XCTAssertEqual(p["satellites_used"] as? Int, 12, "\(p)")
    }

    // MARK: Generated logs

    func testGeneratedFourHundredMetreWalkWithAGapMeasuresWithinOnePercentAndExportsParse() throws {
        let directory = try TemporaryDirectory()
        // HDOP 0.25: gpsd's eph (19 m x HDOP) is 4.75 m, so the 5 m floor is the jitter threshold.
        let (log, truth) = try NMEAWalk.generate(["--hdop", "0.25", "walk:200:45", "gap:20", "walk:200:45", "stay:5"],
                                                 into: directory, name: "walk")
        let segments = truth["segments"] as? [[String: Any]] ?? []
        let gap = segments[1]
        let end = try XCTUnwrap(segments.last?["end"] as? String)
        let port = GPSDFake.freePort()
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        let daemon = try Self.startDaemon(port: port, directory: directory)
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["POSITION"]])
        try fake.play(once: daemon)
        var positions: [[String: Any]] = []
        while positions.last?["time"] as? String != end.replacingOccurrences(of: "Z", with: ".000Z") {
            let event = try watcher.readObject()
            if event["class"] as? String == "POSITION" { positions.append(event) }
        }
        fake.stop()

        // No position is current inside the gap; the daemon ignored the receiver's no-fix reports.
        let gapStart = try XCTUnwrap(isoDate(gap["start"] as? String)), gapEnd = try XCTUnwrap(isoDate(gap["end"] as? String))
        for p in positions {
            let t = try XCTUnwrap(isoDate(p["time"] as? String))
            XCTAssertFalse(t > gapStart && t <= gapEnd, "position inside the gap at \(p["time"] ?? "")")
        }
        let status = try daemon.connect().request(["cmd": "status"])
        XCTAssertGreaterThanOrEqual(Self.gps(status)["fixes_ignored"] as? Int ?? 0, 20)

        let track = try daemon.connect().request(["cmd": "track", "format": "geojson"])
        let distance = try XCTUnwrap(track["distance_m"] as? Double)
        XCTAssertEqual(distance, 400, accuracy: 4, "track distance \(distance) m for a 400 m walk")

        // GeoJSON: a LineString of lon,lat that a standard JSON parser reads.
        let document = try XCTUnwrap(track["document"] as? String)
        let feature = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])
        let geometry = try XCTUnwrap(feature["geometry"] as? [String: Any])
        XCTAssertEqual(geometry["type"] as? String, "LineString")
        let coordinates = try XCTUnwrap(geometry["coordinates"] as? [[Double]])
        XCTAssertEqual(coordinates.count, track["points"] as? Int)
        let start = (truth["segments"] as? [[String: Any]])?.first
        XCTAssertNotNil(start)
        XCTAssertEqual(coordinates.first?[0] ?? 0, -1.2577, accuracy: 1e-4, "longitude first")
        XCTAssertEqual(coordinates.first?[1] ?? 0, 51.752, accuracy: 1e-4)

        // GPX through stepctl, as a user would save it: `stepctl track --gpx > walk.gpx`.
        let result = try runCommand(Binaries.stepctl, ["track", "--gpx", "--socket", daemon.socketPath])
        XCTAssertEqual(result.status, 0, result.stderr)
        let gpxPath = directory.file("walk.gpx")
        try result.stdout.write(toFile: gpxPath, atomically: true, encoding: .utf8)
        let parser = try XCTUnwrap(XMLParser(contentsOf: URL(fileURLWithPath: gpxPath)))
        let counter = TrackPointCounter()
        parser.shouldProcessNamespaces = true
        parser.delegate = counter
        XCTAssertTrue(parser.parse(), "GPX does not parse: \(String(describing: parser.parserError))")
        XCTAssertEqual(counter.namespace, "http://www.topografix.com/GPX/1/1")
        XCTAssertEqual(counter.version, "1.1")
        XCTAssertEqual(counter.points, coordinates.count)
    }

    func testGeneratedTenMinuteStayYieldsOneVisitWithArrivalAndDepartureWithinTwoFixes() throws {
        let directory = try TemporaryDirectory()
        let (log, truth) = try NMEAWalk.generate(["--jitter-m", "1", "walk:200", "stay:600", "walk:200"],
                                                 into: directory, name: "stay")
        let stay = try XCTUnwrap((truth["segments"] as? [[String: Any]])?[1])
        let arrival = try XCTUnwrap(isoDate(stay["start"] as? String))
        let departure = try XCTUnwrap(isoDate(stay["end"] as? String))
        let end = try XCTUnwrap(isoDate((truth["segments"] as? [[String: Any]])?.last?["end"] as? String))
        let port = GPSDFake.freePort()
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        let daemon = try Self.startDaemon(port: port, directory: directory)
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["VISIT", "POSITION"]])
        try fake.play(once: daemon)
        var visitEvents: [[String: Any]] = []
        var last = Date.distantPast
        while last < end {
            let event = try watcher.readObject()
            switch event["class"] as? String {
            case "VISIT": visitEvents.append(event)
            case "POSITION": last = isoDate(event["time"] as? String) ?? last
            default: break
            }
        }
        fake.stop()

        XCTAssertEqual(visitEvents.count, 2, "\(visitEvents)")
        XCTAssertTrue(visitEvents.first?["departure"] is NSNull, "arrival event has departure null")
        let visits = try XCTUnwrap(daemon.connect().request(["cmd": "visits"])["visits"] as? [[String: Any]])
        XCTAssertEqual(visits.count, 1)
        let v = try XCTUnwrap(visits.first)
        let gotArrival = try XCTUnwrap(isoDate(v["arrival"] as? String))
        let gotDeparture = try XCTUnwrap(isoDate(v["departure"] as? String))
        XCTAssertEqual(gotArrival.timeIntervalSince(arrival), 0, accuracy: 2, "arrival within 2 fixes")
        XCTAssertEqual(gotDeparture.timeIntervalSince(departure), 0, accuracy: 2, "departure within 2 fixes")
        XCTAssertEqual(v["lat"] as? Double ?? 0, stay["lat"] as? Double ?? 1, accuracy: 1e-5)
        XCTAssertEqual(v["lon"] as? Double ?? 0, stay["lon"] as? Double ?? 1, accuracy: 1e-5)
    }

    // MARK: gpsd going away

    func testGpsdStoppedAndRestartedSixTimesFixesResumeAndStepsKeepBeingServed() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        let daemon = try Self.startDaemon(port: port, directory: directory)
        try daemon.waitUntil(timeout: 10, "gps unavailable with no gpsd") { status in
            let g = Self.gps(status)
            return g["state"] as? String == "unavailable" && (g["error"] as? String ?? "").contains("cannot reach gpsd")
        }
        let start = try XCTUnwrap(isoDate("2024-05-01T10:00:00Z"))
        var restarts = 0  // gpsds that listed no device, stopped by GPSDFake: the daemon may have connected to one
        let rounds = 6  // the retry's doubling and its cap are ClockDrivenTests' and the GPS tests' of StepServiceTests
        for round in 0..<rounds {
            // Each gpsd run carries on the receiver's clock: up to 300 fixes (6 s at gpsfake's pace, so that a
            // daemon whose reconnect comes late still finds fixes; the round ends at its first one), starting
            // 400 s after the last run's.
            let first = start.addingTimeInterval(Double(round) * 400)
            let (log, _) = try NMEAWalk.generate(["--start-time", iso(first), "--jitter-m", "1", "stay:300"],
                                                 into: directory, name: "run\(round)")
            // Held back until the daemon's retry (doubling from 0.2 s while gpsfake starts, which takes seconds
            // under load) has found this gpsd.
            let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.02, stepped: true, directory: directory)
            restarts += fake.restarts
            try fake.play(once: daemon, hasConnected: round + 1)
            try daemon.waitUntil(timeout: 15, "fixes resume in round \(round)") { status in
                guard Self.gps(status)["state"] as? String == "fix" else { return false }
                let t = isoDate(try Self.position(daemon)["time"] as? String) ?? .distantPast
                return t > first
            }
            fake.stop()
            try daemon.waitUntil(timeout: 10, "gps unavailable after gpsd stopped in round \(round)") { status in
                Self.gps(status)["state"] as? String == "unavailable"
            }
            let steps = try daemon.connect().request(["cmd": "steps"])
            XCTAssertEqual(steps["class"] as? String, "STEPS")
        }
        XCTAssertTrue(daemon.process.isRunning)
        let status = try daemon.connect().request(["cmd": "status"])
        let connections = Self.gps(status)["connections"] as? Int ?? 0
        XCTAssert((rounds...rounds + restarts).contains(connections), "\(connections) connections to \(rounds) gpsds (\(restarts) started again)")
        XCTAssertEqual(daemon.terminate(), 0)
        // Transitions are logged once each, not once per retry.
        let unavailableLines = daemon.log.components(separatedBy: "\n").filter { $0.contains("gps: unavailable") }
        XCTAssertEqual(unavailableLines.count, connections + 1, daemon.log)
    }
}

private func isoDate(_ text: String?) -> Date? {
    guard let text else { return nil }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let d = formatter.date(from: text) { return d }
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)
}

private func iso(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
}

private final class TrackPointCounter: NSObject, XMLParserDelegate {
    var points = 0
    var namespace: String?
    var version: String?
    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if name == "gpx" {
            namespace = namespaceURI
            version = attributes["version"]
        }
        if name == "trkpt" { points += 1 }
    }
}

/// Failures gathered from the threads that replay logs at once, reported on the test's own thread.
private final class ProblemList: Sendable {
    private let problems = Locked<[String]>([])
    func add(_ more: [String]) { problems.withLock { $0 += more } }
    var all: [String] { problems.withLock { $0 } }
}
