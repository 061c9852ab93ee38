import Foundation
import XCTest

/// A port that answers but is not gpsd (issue 56): gpsd sends VERSION to every client as it connects, so a
/// port that sends something else first, or nothing, is named as not gpsd in STATUS and in the log, once, and
/// tried again with the growing back-off of an unreachable gpsd (2 s, 4 s, 8 s, ... 60 s), not every 2 s.
final class GPSDNotGpsdTests: XCTestCase {
    /// The daemon pointed at `listener` until it has tried `tries` times: its STATUS `gps` then, and its log.
    /// `position` and `stepctl position` say so too.
    private func watch(_ listener: AcceptingListener, tries: Int, timeout: TimeInterval) throws -> (gps: [String: Any], log: String) {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--gpsd", "127.0.0.1:\(listener.port)"])
        defer { daemon.terminate() }
        try pollUntil("the daemon to try 127.0.0.1:\(listener.port) \(tries) times", timeout: timeout, every: 0.1,
                      detail: "\(listener.accepted) tries; log:\n\(daemon.log)") {
            listener.accepted >= tries
        }
        let client = try daemon.connect()
        let status = try client.request(["cmd": "status"])
        let gps = try XCTUnwrap(status["gps"] as? [String: Any], "\(status)")
        // POSITION is also an event's class, which request() skips: the reply read as it comes.
        try client.sendLine(#"{"cmd":"position"}"#)
        let position = try client.readObject()
        XCTAssertNotNil(position["unavailable_since"] as? String, "\(position)")
        XCTAssertEqual(position["error"] as? String, gps["error"] as? String, "\(position)")
        let stepctl = try runCommand(Binaries.stepctl, ["--socket", daemon.socketPath, "position"])
        XCTAssertTrue(stepctl.stdout.hasPrefix("GPS unavailable since "), stepctl.stdout + stepctl.stderr)
        XCTAssertTrue(stepctl.stdout.contains("is not gpsd"), stepctl.stdout)
        return (gps, daemon.log)
    }

    private func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// Another service's banner (an SSH server's): named, logged once over 3 tries (0, 2 and 6 s).
    func testAPortWithAnotherServicesBannerIsNamedNotGpsdOnceOverItsRetries() throws {
        let listener = try AcceptingListener(greeting: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
        defer { listener.stop() }
        let (gps, log) = try watch(listener, tries: 3, timeout: 30)
        let reason = "127.0.0.1:\(listener.port) answered but is not gpsd: it sent \"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\" where gpsd sends VERSION first"
        XCTAssertEqual(gps["state"] as? String, "unavailable", "\(gps)")
        XCTAssertEqual(gps["error"] as? String, reason, "\(gps)")
        XCTAssertEqual(gps["connections"] as? Int, 0, "a port that is not gpsd counted as a connection: \(gps)")
        XCTAssertEqual(occurrences(of: "is not gpsd", in: log), 1, log)
        XCTAssertEqual(occurrences(of: "gps: unavailable", in: log), 1, "one line for the one state: \(log)")
        XCTAssertFalse(log.contains("gps: no_fix"), "reported as connected: \(log)")
    }

    /// A port that accepts and sends nothing: named after the VERSION wait (5 s), logged once over 3 tries
    /// (0, 7 and 16 s: each try waits 5 s, then 2 s and 4 s of back-off).
    func testASilentPortIsNamedNotGpsdOnceOverItsRetries() throws {
        let listener = try AcceptingListener(greeting: nil)
        defer { listener.stop() }
        let (gps, log) = try watch(listener, tries: 3, timeout: 60)
        XCTAssertEqual(gps["state"] as? String, "unavailable", "\(gps)")
        XCTAssertEqual(gps["error"] as? String, "127.0.0.1:\(listener.port) answered but is not gpsd: no VERSION within 5 s", "\(gps)")
        XCTAssertEqual(occurrences(of: "is not gpsd", in: log), 1, log)
        XCTAssertEqual(occurrences(of: "gps: unavailable", in: log), 1, "one line for the one state: \(log)")
        XCTAssertFalse(log.contains("gps: no_fix"), "reported as connected: \(log)")
    }
}
