import Foundation
import StepProtocol
import XCTest

/// The dashboard's map follows the walk (the track and the position fitted in view) until the user moves the
/// map, whatever way: then not for 10 s
/// (docs/web.md, "Map"). A real gpsd (gpsfake) plays a walk north, a fix every 0.3 s; headless Chromium gets the
/// user's key press and double click as input events, as from a keyboard and a mouse.
final class WebMapFollowTests: XCTestCase {
    /// How far in CSS pixels the walk is from being fitted in the map: the track's centre from the map's, or
    /// 999 when the track or the position dot is (partly) out of view; null before there are both.
    static let offCentre = """
        (() => {
          const map = document.getElementById('map').getBoundingClientRect();
          const dot = document.querySelector('#map path.position');
          const track = document.querySelector('#map path.track');
          if (!dot || !track) return null;
          const inside = (r) => r.left >= map.left - 2 && r.right <= map.right + 2 && r.top >= map.top - 2 && r.bottom <= map.bottom + 2;
          const at = dot.getBoundingClientRect(), path = track.getBoundingClientRect();
          if (path.width === 0 && path.height === 0) return null;
          if (!inside(at) || !inside(path)) return 999;
          return Math.hypot(path.x + path.width / 2 - (map.x + map.width / 2), path.y + path.height / 2 - (map.y + map.height / 2));
        })()
        """

    func testEveryUserMovePausesFollowingForTenSeconds() throws {
        try GPSDFake.requireTools()
        _ = try Chromium.requireBrowser()
        let directory = try TemporaryDirectory()
        // Dated in the past (so none is refused as from the future), 2000 m north: about 7 minutes of fixes.
        let (log, _) = try NMEAWalk.generate(["--start-time", Timestamp.string(Date(timeIntervalSinceNow: -3000)),
                                              "--hdop", "0.25", "walk:2000:0"], into: directory, name: "north")
        let gpsPort = GPSDFake.freePort()
        // No sensor needed: the daemon waits for one and still serves positions.
        let daemon = try Daemon(arguments: ["--iio-uri", "local:", "--device", "no-such-accelerometer",
                                            "--gpsd", "127.0.0.1:\(gpsPort)", "--gps-retry-s", "0.2"], directory: directory)
        defer { daemon.terminate() }
        let gpsd = try GPSDFake(log: log, port: gpsPort, cycleSeconds: 0.1, directory: directory)
        defer { gpsd.stop() }
        let page = try DashboardPage(socket: daemon.socketPath, directory: directory)
        defer { page.stop() }
        let fixesAccepted = { try (daemon.connect().request(["cmd": "status"])["gps"] as? [String: Any])?["fixes_accepted"] as? Int ?? 0 }
        try page.waitUntil("(\(Self.offCentre) ?? 99) < 10", timeout: 30, "the map to follow the position")
        let map = try XCTUnwrap(try page.evaluate("(() => { const r = document.getElementById('map').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()") as? [Double])

        let gestures: [(name: String, perform: () throws -> Void)] = [
            // Leaflet pans 80 px for an arrow key once the map has the focus (a click gives it, and moves nothing).
            ("the keyboard's left arrow", {
                try page.browser.click(x: map[0], y: map[1], session: page.session)
                try page.browser.press(key: "ArrowLeft", keyCode: 37, session: page.session)
            }),
            // Zooms in around the pointer, 120 px east of the centre: the centre moves.
            ("a double click", { try page.browser.click(x: map[0] + 120, y: map[1], count: 2, session: page.session) }),
        ]
        for gesture in gestures {
            try page.waitUntil("(\(Self.offCentre) ?? 99) < 10", timeout: 30, "the map to follow the position")
            let moved = Date()
            try gesture.perform()
            // Leaflet's pan and zoom animations (0.25 s): the map has left the walk's fit.
            try page.waitUntil("(\(Self.offCentre) ?? 0) > 40", timeout: 30, "the map to move off the walk after \(gesture.name)")
            // New fixes come, and the map stays where the user put it.
            let fixesBefore = try fixesAccepted()
            var nearest = Double.infinity
            while Date().timeIntervalSince(moved) < 8 {
                nearest = min(nearest, try page.evaluate(Self.offCentre) as? Double ?? 0)
                usleep(100_000)  // the interval of a watch over a span (the behaviour), not a wait for an event
            }
            XCTAssertGreaterThan(try fixesAccepted(), fixesBefore, "no new fix came after \(gesture.name)")
            XCTAssertGreaterThan(nearest, 40, "within 8 s of \(gesture.name) the walk came within \(Int(nearest)) px of fitted: the map followed it again (or did not move)")
            // Then, once the pause is over, it follows again.
            try page.waitUntil("(\(Self.offCentre) ?? 99) < 10", timeout: 10, "the map to follow again after \(gesture.name)")
            let resumed = Date().timeIntervalSince(moved)
            print("after \(gesture.name) the map followed again \(String(format: "%.1f", resumed)) s later")
            XCTAssertGreaterThanOrEqual(resumed, 9.5, "the pause after \(gesture.name) is 10 s")
        }
        XCTAssertEqual(page.dialogs, [])
    }
}
