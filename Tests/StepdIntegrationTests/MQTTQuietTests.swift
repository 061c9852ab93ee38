import Foundation
import XCTest

/// A connected MQTT client with nothing to publish leaves its network thread asleep until the keepalive's
/// PINGREQ: libmosquitto's loop waits up to the keepalive (it shortens the wait to the next ping itself), and
/// a publish or the stop's DISCONNECT wakes it through the client's socket pair. A loop that waited 1 s would
/// cost a wake-up a second for nothing while connected (issue 29).
final class MQTTQuietTests: XCTestCase {
    private func mqttState(_ daemon: Daemon) throws -> String? {
        (try daemon.connect().request(["cmd": "status"])["mqtt"] as? [String: Any])?["state"] as? String
    }

    func testAQuietConnectionWakesOnlyForItsKeepaliveAndTheStopIsPrompt() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        defer { broker.stop() }
        // No accelerometer and no gpsd: nothing to publish after the connection's first messages.
        let daemon = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps",
                                            "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)", "--mqtt-device-id", "quiet",
                                            "--mqtt-keepalive-s", "5"], directory: directory)
        let pid = daemon.process.processIdentifier
        try pollUntil("the MQTT connection", timeout: 15, every: 0.1, detail: "log:\n\(daemon.log)") {
            try self.mqttState(daemon) == "connected"
        }
        let thread = try XCTUnwrap(GPSDQuietTests.thread(named: "stepd.mqtt.net", of: pid), "no thread named stepd.mqtt.net")
        // The connection's first messages: done once the thread has gone quiet for half a second.
        try pollUntil("the MQTT thread to go quiet", timeout: 20, every: 0.5) {
            let first = try XCTUnwrap(GPSDQuietTests.voluntarySwitches(pid: pid, tid: thread))
            usleep(500_000)  // the window in which the thread must not wake, not a wait for an event
            return try XCTUnwrap(GPSDQuietTests.voluntarySwitches(pid: pid, tid: thread)) == first
        }
        let pingsBefore = broker.log.components(separatedBy: "Received PINGREQ").count - 1
        let before = try XCTUnwrap(GPSDQuietTests.voluntarySwitches(pid: pid, tid: thread))
        // The behaviour is the wake-ups over real time: 11 s watched (two 5 s keepalives), not a wait for an event.
        Thread.sleep(forTimeInterval: 11)
        let after = try XCTUnwrap(GPSDQuietTests.voluntarySwitches(pid: pid, tid: thread))
        let pings = broker.log.components(separatedBy: "Received PINGREQ").count - 1 - pingsBefore
        // A 5 s keepalive: two pings in 11 s, each a wake-up to send it and one for the PINGRESP; the 1 s loop
        // woke the thread 11 times more.
        XCTAssertGreaterThanOrEqual(pings, 1, "the keepalive still pings the broker:\n\(broker.log.suffix(3000))")
        XCTAssertLessThanOrEqual(after - before, 2 * pings + 1, "the MQTT thread woke \(after - before) times in 11 s for \(pings) pings")
        XCTAssertEqual(try mqttState(daemon), "connected", "the broker kept the connection")

        let stopStarted = Date()
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertLessThan(Date().timeIntervalSince(stopStarted), 2.5, "the stop waited for the MQTT loop")
        try pollUntil("the broker to see the DISCONNECT", timeout: 5, every: 0.05, detail: String(broker.log.suffix(2000))) {
            broker.log.contains("Received DISCONNECT from")
        }
    }
}
