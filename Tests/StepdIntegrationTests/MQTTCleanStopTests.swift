import Foundation
import XCTest

/// A clean stop delivers (docs/fleet.md, "A clean stop"): at SIGTERM the daemon publishes the retained STEPS with
/// the count it saves, before it says `offline`, so a dashboard never keeps a stale count of a device switched off.
final class MQTTCleanStopTests: XCTestCase {
    func testTheRetainedStepsAfterSIGTERMEqualTheCountTheDaemonSaved() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        let state = directory.file("state")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "5", "--loop", "--no-gps",
                                            "--state-dir", state, "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                                            "--mqtt-device-id", "stop"],
                                directory: directory, socketName: "a.sock")
        try daemon.waitUntil(timeout: 30, "mqtt.state connected") { ($0["mqtt"] as? [String: Any])?["state"] as? String == "connected" }
        // Mid-walk, between two of the publisher's STEPS updates: the last steps are the ones a late publish loses.
        try daemon.waitForSteps(timeout: 60, "the walk to count 40 steps") { ($0["steps"] as? Int ?? 0) >= 40 }
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)

        // The count saved, as a daemon without MQTT reads it back from the same history.
        let reader = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps", "--state-dir", state],
                                directory: directory, socketName: "b.sock")
        let saved = try XCTUnwrap(try reader.connect().request(["cmd": "steps"])["steps"] as? Int)
        reader.terminate()

        let retained = try retainedMessages(broker: broker, topics: ["stepd/stop/steps", "stepd/stop/status"])
        XCTAssertEqual(retained["stepd/stop/status"], "offline")
        let steps = try XCTUnwrap(retained["stepd/stop/steps"], "no retained steps: \(retained)")
        let payload = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(steps.utf8)) as? [String: Any])
        XCTAssertGreaterThanOrEqual(saved, 40)
        XCTAssertEqual(payload["steps"] as? Int, saved, "retained \(steps), saved \(saved); log:\n\(daemon.log)")
    }
}
