import Foundation
import XCTest

/// The dashboard's status line (docs/web.md, "Status line") in the states a board meets, read from the page in
/// headless Chromium: said there quietly, never in a pop-up.
final class WebStatusLineTests: XCTestCase {
    override func setUpWithError() throws {
        _ = try Chromium.requireBrowser()
    }

    func testSensorWaitingAndGpsdNotAnsweringAreSaidInTheStatusLine() throws {
        let directory = try TemporaryDirectory()
        // No --replay and no accelerometer: the daemon waits for one (what the installed service does on a board
        // whose sensor is not there yet); nobody listens on its gpsd port.
        let daemon = try Daemon(arguments: ["--iio-uri", "local:", "--device", "no-such-accelerometer",
                                            "--gpsd", "127.0.0.1:\(GPSDFake.freePort())", "--gps-retry-s", "0.2"],
                                directory: directory)
        defer { daemon.terminate() }
        try daemon.waitUntil(timeout: 20, "the sensor waiting and gpsd unavailable") {
            ($0["source"] as? [String: Any])?["state"] as? String == "waiting"
                && ($0["gps"] as? [String: Any])?["state"] as? String == "unavailable"
        }
        let page = try DashboardPage(socket: daemon.socketPath, directory: directory)
        defer { page.stop() }
        try page.waitUntil("document.getElementById('status').textContent.includes('GPS')", "the status line")
        let status = page.status
        XCTAssertTrue(status.contains("sensor: waiting for an accelerometer"), status)
        XCTAssertTrue(status.contains("GPS off: gpsd not reachable"), status)
        XCTAssertEqual(try page.evaluate("document.getElementById('status').classList.contains('problem')") as? Bool, true,
                       "problems are shown in the warning colour")
        // A few status polls later (every 2 s), still said only there.
        usleep(4_500_000)  // the line must stay over two polls (every 2 s): a span, not a wait for an event
        XCTAssertTrue(page.status.contains("GPS off: gpsd not reachable"), page.status)
        XCTAssertEqual(page.dialogs, [], "the page opened a pop-up")
    }

    func testAQuietReceiverIsStaleOnThePageWhenStatusSaysSo() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        // gpsd stays up; the receiver sends ten epochs of a generated walk (GGA, GSA, RMC each), then nothing.
        let (log, _) = try NMEAWalk.generate(["walk:200"], into: directory, name: "quiet")
        let fake = try GPSDFake(log: log, port: port, stepped: true, directory: directory)
        defer { fake.stop() }
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--gpsd", "127.0.0.1:\(port)",
                                            "--gps-retry-s", "0.2"], directory: directory)
        defer { daemon.terminate() }
        try daemon.waitUntil(timeout: 20, "gpsd connected") { (($0["gps"] as? [String: Any])?["connections"] as? Int ?? 0) >= 1 }
        let page = try DashboardPage(socket: daemon.socketPath, directory: directory)
        defer { page.stop() }
        fake.send(sentences: 30)
        try page.waitUntil("document.getElementById('status').textContent.includes('GPS fix')", "a fix on the page")
        // The page says stale when STATUS does (the daemon's rule), not on a clock of its own.
        try daemon.waitUntil(timeout: 30, "STATUS stale") { ($0["gps"] as? [String: Any])?["state"] as? String == "stale" }
        try page.waitUntil("document.getElementById('status').textContent.includes('GPS stale: last fix')", "stale on the page")
        XCTAssertEqual(try page.evaluate("document.getElementById('status').classList.contains('problem')") as? Bool, true)
    }

    func testGpsSwitchedOffIsSaidInGreyAsAChoice() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--no-gps"], directory: directory)
        defer { daemon.terminate() }
        let page = try DashboardPage(socket: daemon.socketPath, directory: directory)
        defer { page.stop() }
        try page.waitUntil("document.getElementById('status').textContent.includes('GPS')", "the status line")
        // --no-gps is what the user asked for: "GPS off", not "gpsd not reachable", and not a problem.
        XCTAssertEqual(page.status, "replay running · GPS off")
        XCTAssertEqual(try page.evaluate("document.getElementById('status').classList.contains('problem')") as? Bool, false)
        XCTAssertEqual(page.dialogs, [], "the page opened a pop-up")
    }

    /// The daemon down when the page opens (stopped, restarting, not started yet): the page says it waits for
    /// stepd, in the status line and in the empty charts, and fills in by itself once the daemon is there.
    func testThePageWaitsForStepdAndFillsInWhenItStarts() throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let page = try DashboardPage(socket: socket, directory: directory)
        defer { page.stop() }
        try page.waitUntil("document.getElementById('status').textContent.startsWith('waiting for stepd')", "the waiting status")
        XCTAssertEqual(try page.evaluate("document.getElementById('status').classList.contains('problem')") as? Bool, true)
        try page.waitUntil("document.querySelectorAll('svg.chart text.placeholder').length === 2", "both charts waiting")
        XCTAssertEqual(try page.evaluate("[...document.querySelectorAll('svg.chart')].map((svg) => svg.textContent).join('|')") as? String,
                       "waiting for stepd|waiting for stepd")
        XCTAssertEqual(try page.evaluate("document.body.classList.contains('waiting')") as? Bool, true)
        XCTAssertEqual(try page.evaluate("document.getElementById('steps').textContent") as? String, "waiting for stepd")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"], directory: directory)
        defer { daemon.terminate() }
        try page.waitUntil("document.getElementById('status').textContent.includes('GPS off')", timeout: 30, "the daemon's status")
        try page.waitUntil("document.querySelectorAll('svg.chart text.placeholder').length === 0"
                           + " && document.querySelectorAll('#hourly rect.slot').length === 24", timeout: 30, "the charts drawn")
        XCTAssertEqual(try page.evaluate("document.body.classList.contains('waiting')") as? Bool, false)
        try page.waitUntil("/^[0-9,]+$/.test(document.getElementById('steps').textContent)", "the count")
        XCTAssertEqual(page.dialogs, [], "the page opened a pop-up")
    }
}
