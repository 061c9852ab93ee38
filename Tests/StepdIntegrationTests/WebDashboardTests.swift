import Foundation
import StepProtocol
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The dashboard in a real browser: stepd replaying the bundled walk in real time with a real gpsd (gpsfake)
/// replaying a generated walk with a stay, stepd-web in front of it, and headless Chromium loading the page.
/// Everything is read back from the live page's DOM. One daemon, one stepd-web and one Chromium for the suite.
final class WebDashboardTests: XCTestCase {
    /// What the suite shares; made by the first test, stopped by the class's tearDown.
    final class Fixture {
        let directory: TemporaryDirectory
        let gpsd: GPSDFake
        let daemon: Daemon
        let page: DashboardPage
        /// The second of the last fix in the GPS log ("2026-11-23T22:21:02"): once `track` ends in it, the
        /// track is complete (NMEA keeps centiseconds, the truth file microseconds).
        let lastFix: String

        init() throws {
            try GPSDFake.requireTools()
            _ = try Chromium.requireBrowser()
            directory = try TemporaryDirectory()
            // A walk, a 2-minute stay (a visit) and a walk away, ending now, played in about 15 s.
            let seconds = 150 / 1.4 + 120 + 150 / 1.4
            let start = Date(timeIntervalSinceNow: -seconds - 30)
            let (log, truth) = try NMEAWalk.generate(["--start-time", Timestamp.string(start), "--hdop", "0.25",
                                                      "--jitter-m", "1", "walk:150", "stay:120", "walk:150:90"],
                                                     into: directory, name: "web")
            let end = try XCTUnwrap((truth["segments"] as? [[String: Any]])?.last?["end"] as? String)
            lastFix = String(end.prefix(19))
            let gpsPort = GPSDFake.freePort()
            // gpsd first, the log held back until the daemon watches (GPSDFake.play(once:)).
            let gpsd = try GPSDFake(log: log, port: gpsPort, cycleSeconds: 0.01, stepped: true, directory: directory)
            let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop",
                                                "--gpsd", "127.0.0.1:\(gpsPort)", "--gps-retry-s", "0.2",
                                                "--visit-min-stay-s", "60", "--visit-radius-m", "30"],
                                    directory: directory)
            try gpsd.play(once: daemon)
            (self.gpsd, self.daemon) = (gpsd, daemon)
            try Self.write("s3cret-token\n", to: directory.file("token"))
            // Tiles from a port nobody listens on: the map must fall back to its grid.
            page = try DashboardPage(socket: daemon.socketPath, directory: directory,
                                     webArguments: ["--token-file", directory.file("token"),
                                                    "--tiles", "http://127.0.0.1:\(GPSDFake.freePort())/{z}/{x}/{y}.png"])
        }

        static func write(_ text: String, to path: String) throws {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }

        func stop() {
            page.stop()
            gpsd.stop()
            daemon.terminate()
        }
    }

    nonisolated(unsafe) static var fixture: Fixture?
    nonisolated(unsafe) static var fixtureError: Error?

    override func setUpWithError() throws {
        if Self.fixture == nil, Self.fixtureError == nil {
            do { Self.fixture = try Fixture() } catch { Self.fixtureError = error }
        }
        if let error = Self.fixtureError { throw error }
    }

    override class func tearDown() {
        fixture?.stop()
        fixture = nil
        super.tearDown()
    }

    private var f: Fixture { Self.fixture! }

    private func page(_ expression: String) throws -> Any? { try f.page.evaluate(expression) }
    private func waitOnPage(_ expression: String, timeout: TimeInterval = 30, _ what: String,
                            file: StaticString = #filePath, line: UInt = #line) throws {
        try f.page.waitUntil(expression, timeout: timeout, what, file: file, line: line)
    }

    /// The big count as the page shows it.
    private func shownSteps() throws -> Int {
        let text = try page("document.getElementById('steps').textContent") as? String ?? ""
        return Int(text.filter(\.isNumber)) ?? -1
    }

    func testCountIncreasesLiveWithoutReload() throws {
        try waitOnPage("/\\d/.test(document.getElementById('steps').textContent)", "a count on the page")
        // Marks the document: a reload would lose the mark, so a larger count below came over the event stream.
        _ = try page("window.stepdTestMark = 1")
        let first = try shownSteps()
        try waitOnPage("Number(document.getElementById('steps').textContent.replace(/\\D/g, '')) > \(first)",
                       timeout: 30, "the count to rise above \(first)")
        XCTAssertEqual(try page("window.stepdTestMark") as? Int, 1, "the page was reloaded")
        // And it is the daemon's count, not a number the page made up.
        let steps = try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? -1
        let shown = try shownSteps()
        XCTAssertLessThanOrEqual(abs(steps - shown), 3, "page \(shown), daemon \(steps)")
    }

    /// docs/web.md: "the page changes within half a second of a step". A plain watcher of the daemon notes when
    /// each STEP arrives and the page notes when its count changes (a MutationObserver's Date.now(): the same
    /// machine, the same clock); a step's delay is from its arrival at the watcher to the first time the page
    /// shows that count or a larger one, so that a page which skipped counts (one that polls) is charged for
    /// every step it showed late, not only for the ones it happened to show.
    func testAStepShowsOnThePageWithinHalfASecond() throws {
        try waitOnPage("/\\d/.test(document.getElementById('steps').textContent)", "a count on the page")
        _ = try page("""
            window.stepdShown = [];
            new MutationObserver(() => window.stepdShown.push([Date.now(), document.getElementById('steps').textContent]))
              .observe(document.getElementById('steps'), { childList: true, characterData: true, subtree: true });
            true
            """)
        let watcher = try SocketClient(path: f.daemon.socketPath, receiveTimeout: 2)
        _ = try watcher.request(["cmd": "watch", "enable": true, "classes": ["STEP"]])
        var received: [(steps: Int, atMs: Double)] = []
        let until = Date().addingTimeInterval(30)
        while Date() < until, received.count < 40 {
            // A read that times out (a pause in the recording) returns nothing; the loop goes on to the deadline.
            guard let event = try? watcher.readObject(), event["class"] as? String == "STEP",
                  let steps = event["steps"] as? Int else { continue }
            received.append((steps, Date().timeIntervalSince1970 * 1000))
        }
        watcher.close()
        // The page's last ones: it shows the last count the watcher received.
        if let last = received.last?.steps {
            try waitOnPage("parseInt(document.getElementById('steps').textContent.replace(/\\D/g, '')) >= \(last)",
                           "the page to show \(last) steps")
        }
        let endMs = Date().timeIntervalSince1970 * 1000
        let shown = (try page("window.stepdShown") as? [[Any]] ?? []).compactMap { entry -> (atMs: Double, steps: Int)? in
            guard entry.count == 2, let at = (entry[0] as? NSNumber)?.doubleValue,
                  let steps = Int((entry[1] as? String ?? "").filter(\.isNumber)) else { return nil }
            return (at, steps)
        }
        XCTAssertGreaterThanOrEqual(received.count, 10, "too few steps in 30 s to measure")
        let delays = received.map { step -> Double in
            let first = shown.first { $0.steps >= step.steps }?.atMs ?? endMs
            return first - step.atMs
        }.sorted()
        guard !delays.isEmpty else { return }
        let p50 = delays[delays.count / 2], p90 = delays[delays.count * 9 / 10], worst = delays[delays.count - 1]
        print("a STEP on the page after a direct watcher got it: p50 \(Int(p50)) ms, p90 \(Int(p90)) ms, max \(Int(worst)) ms (\(delays.count) steps)")
        XCTAssertLessThan(p50, 500, "median step-to-page delay; p90 \(Int(p90)) ms, max \(Int(worst)) ms over \(delays.count) steps")
    }

    func testHourlyChartHasABarForEachHourWithSteps() throws {
        try waitOnPage("document.querySelectorAll('#hourly rect.bar').length > 0", timeout: 40, "a bar in the hourly chart")
        let history = try f.daemon.connect().request(["cmd": "history", "bin": "hour"])
        let bins = (history["bins"] as? [[String: Any]] ?? []).filter { ($0["steps"] as? Int ?? 0) > 0 }
        let bars = try page("document.querySelectorAll('#hourly rect.bar').length") as? Int
        XCTAssertEqual(bars, bins.count, "bars on the page against the daemon's hour bins \(bins)")
        try waitOnPage("document.querySelectorAll('#daily rect.bar').length > 0", timeout: 20, "today's bar in the 30-day chart")
    }

    /// Today's bar in the 30-day chart is the sum of today's hours, at every moment while steps come in (the
    /// two charts once refreshed on separate timers, 5 and 10 s, and disagreed by the steps between).
    func testTodaysDailyBarIsTheSumOfTodaysHours() throws {
        let bars = """
            (() => {
              const hours = [...document.querySelectorAll('#hourly rect.bar')].reduce((sum, bar) => sum + Number(bar.dataset.steps), 0);
              const today = document.querySelector('#daily rect.bar.current');
              return [hours, today ? Number(today.dataset.steps) : 0];
            })()
            """
        try waitOnPage("\(bars).every((steps) => steps > 0)", timeout: 40, "today's bars in both charts")
        var seen: [[Int]] = []
        let first = try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0
        // Sampled over 12 s of walking, longer than either chart's refresh interval.
        for _ in 0..<40 {
            seen.append(try page(bars) as? [Int] ?? [])
            usleep(300_000)  // the interval of a watch over a span (the behaviour), not a wait for an event
        }
        let last = try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0
        XCTAssertGreaterThan(last, first, "no steps while sampling: the test saw no refresh")
        let differing = seen.filter { $0.count != 2 || $0[0] != $0[1] }
        XCTAssertTrue(differing.isEmpty, "[sum of today's hours, today's bar] differ in \(differing.count) of \(seen.count) samples: \(differing.prefix(5))")
        XCTAssertGreaterThan(Set(seen.map { $0.first ?? 0 }).count, 1, "the charts did not refresh while sampling")
    }

    func testMapPolylineHasAsManyPointsAsTrack() throws {
        // Wait until the daemon has the whole log, then for the page to draw the same track.
        let deadline = Date().addingTimeInterval(40)
        var track: [String: Any] = [:]
        while Date() < deadline {
            track = try f.daemon.connect().request(["cmd": "track", "format": "geojson"])
            if (track["end"] as? String)?.hasPrefix(f.lastFix) == true { break }
            usleep(200_000)  // poll interval of a wait for a state, not a fixed wait
        }
        XCTAssertTrue((track["end"] as? String)?.hasPrefix(f.lastFix) == true,
                      "the daemon did not receive the whole GPS log: \(track["end"] ?? "no end") for \(f.lastFix)")
        let points = try XCTUnwrap(track["points"] as? Int)
        XCTAssertGreaterThan(points, 10)
        // Leaflet draws the polyline as one SVG path, a command (M or L) per point: smoothFactor 0 and noClip.
        let drawn = "((document.querySelector('#map path.track') || {}).getAttribute ? document.querySelector('#map path.track').getAttribute('d') : '').match(/[ML]/g)?.length ?? 0"
        try waitOnPage("(\(drawn)) === \(points)", timeout: 20, "a polyline of \(points) points")
        XCTAssertGreaterThan(try page("document.querySelectorAll('#map path.position').length") as? Int ?? 0, 0, "the position dot")
        XCTAssertGreaterThan(try page("document.querySelectorAll('#map path.accuracy').length") as? Int ?? 0, 0, "the accuracy circle")
        try waitOnPage("document.querySelectorAll('#map path.visit').length > 0", timeout: 20, "the visit's marker")
    }

    func testOfflineMapShowsMetricGridAndScaleBar() throws {
        try waitOnPage("document.getElementById('map').classList.contains('offline')", timeout: 20, "the offline map")
        try waitOnPage("document.querySelectorAll('#map .metric-grid canvas').length > 0", "grid tiles")
        let scale = try page("(document.querySelector('#map .leaflet-control-scale-line') || {}).textContent || ''") as? String
        XCTAssertTrue(scale?.hasSuffix("m") == true, "scale bar \(scale ?? "none")")
        let note = try page("document.getElementById('map-note').textContent") as? String ?? ""
        XCTAssertTrue(note.contains("metric grid"), note)
    }

    func testSeismometerGraphMoves() throws {
        let trace = "document.getElementById('trace').getAttribute('points')"
        try waitOnPage("\(trace).split(' ').some((p) => p.split(',')[1] !== '80.0')", "a MOTION sample on the graph")
        let before = try page(trace) as? String
        try waitOnPage("\(trace) !== \(String(data: try JSONSerialization.data(withJSONObject: [before ?? ""]), encoding: .utf8)!)[0]",
                       timeout: 5, "the graph to scroll")
        XCTAssertNotNil(try page("document.getElementById('needle').getAttribute('transform')") as? String)
    }

    func testResetNeedsTheToken() async throws {
        // Enough of the walk that the count since the reset is seen to start again below it.
        try pollUntil("30 steps of the walk", timeout: 60) {
            try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0 >= 30
        }
        let before = try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0
        let none = try await f.page.web.post("/api/reset")
        XCTAssertEqual(none.status, 401, none.body)
        XCTAssertTrue(none.body.contains("reset needs the token: enter the line of stepd-web's --token-file"), none.body)
        let wrong = try await f.page.web.post("/api/reset", token: "guess")
        XCTAssertEqual(wrong.status, 401, wrong.body)
        XCTAssertTrue(wrong.body.contains("wrong token: it is not the line in stepd-web's --token-file"), wrong.body)
        XCTAssertGreaterThanOrEqual(try f.daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0, before,
                                    "a refused reset reset the count")
        // The page's own button without the token: refused, said quietly beside the button. The form is set up
        // once the page has read its settings (the token field shows).
        try waitOnPage("!document.getElementById('token').hidden", timeout: 10, "the reset form set up")
        _ = try page("document.getElementById('token').value = ''; document.getElementById('reset').click()")
        try waitOnPage("document.getElementById('reset-note').textContent.startsWith('not reset')", timeout: 10, "the refusal")
        // With the token, the daemon (run as root here: an admin) resets.
        let right = try await f.page.web.post("/api/reset", token: "s3cret-token")
        XCTAssertEqual(right.status, 200, right.body)
        XCTAssertTrue(right.body.contains("\"class\":\"STEPS\""), right.body)
        // The page shows today first, which a reset leaves alone (the daemon started today: all its steps are
        // today's), and below it the count since the reset, started again.
        let number = { (id: String) in "Number(document.getElementById('\(id)').textContent.replace(/\\D/g, ''))" }
        try waitOnPage("\(number("reset-steps")) < \(before) && \(number("steps")) >= \(before)", timeout: 10,
                       "today's count kept above \(before) and the count since the reset below it")
    }

    /// Every /api reply is JSON with its status, a path that names nothing too (404, the endpoints listed);
    /// the endpoints that exist still answer.
    func testAnUnknownAPIPathAnswers404WithAJSONBody() async throws {
        for path in ["/api/nope", "/api/status/extra", "/api/"] {
            let reply = try await f.page.web.get(path)
            XCTAssertEqual(reply.status, 404, "\(path): \(reply.body)")
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any], "\(path): \(reply.body)")
            XCTAssertTrue((object["error"] as? String ?? "").hasPrefix("no such API: GET \(path); see docs/web.md"), reply.body)
        }
        let status = try await f.page.web.get("/api/status")
        XCTAssertEqual(status.status, 200, status.body)
        XCTAssertTrue(status.body.contains("\"class\":\"STATUS\""), status.body)
        let page = try await f.page.web.get("/")
        XCTAssertEqual(page.status, 200)
    }

    func testWithoutTokenFileResetIsReadOnly() async throws {
        let readOnly = try WebServer(socket: f.daemon.socketPath, directory: f.directory, extra: ["--tiles", "none"])
        defer { readOnly.stop() }
        let reply = try await readOnly.post("/api/reset", token: "s3cret-token")
        XCTAssertEqual(reply.status, 403, reply.body)
        XCTAssertTrue(reply.body.contains("read-only"), reply.body)
        let config = try await readOnly.get("/api/config")
        XCTAssertTrue(config.body.contains("\"read_only\":true"), config.body)
    }
}

/// The real `stepd-web` binary on a free loopback port.
final class WebServer {
    let process = Process()
    let port = GPSDFake.freePort()
    let logPath: String
    var url: String { "http://127.0.0.1:\(port)/" }

    init(socket: String, directory: TemporaryDirectory, extra: [String]) throws {
        logPath = directory.file("stepd-web-\(port).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)!
        process.executableURL = URL(fileURLWithPath: Binaries.stepdWeb)
        process.arguments = ["--listen", "127.0.0.1:\(port)", "--socket", socket] + extra
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while !GPSDFake.accepts(port: port) {
            guard process.isRunning, Date() < deadline else {
                throw NSError(domain: "WebServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "stepd-web did not listen: \(log)"])
            }
            usleep(20_000)  // poll interval of a wait for a state, not a fixed wait
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }

    func get(_ path: String) async throws -> (status: Int, body: String) {
        try await send(URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!))
    }

    func post(_ path: String, token: String? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return try await send(request)
    }

    private func send(_ request: URLRequest) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? -1, String(decoding: data, as: UTF8.self))
    }
}
