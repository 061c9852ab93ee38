import Foundation
import StepProtocol
import XCTest

/// A board that boots before its network: stepd started with `--mqtt-url` naming a broker that is not there yet.
/// It tries from the first attempt with the back-off of docs/fleet.md (1, 2, 4, 8 ... 30 s), STATUS says why it
/// waits and when it tries next, and once the broker comes the minutes queued meanwhile are delivered.
final class MQTTLateBrokerTests: XCTestCase {
    private func mqtt(_ daemon: Daemon) throws -> [String: Any] {
        try daemon.connect().request(["cmd": "status"])["mqtt"] as? [String: Any] ?? [:]
    }

    /// The broker's port has no listener for the daemon's first ~10 s; then Mosquitto starts there. Three finished
    /// minutes of an earlier run wait in the history (the outbox's mark before them, as when the daemon ran with
    /// MQTT and the broker away): they reach a subscriber within 45 s of the broker's start. ~25 s.
    func testStartedBeforeTheBrokerConnectsWhenItComesAndDeliversTheQueuedMinutes() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let broker = try MosquittoBroker(directory: directory)
        // A persistent QoS 1 session, made while the broker is up: the broker keeps the daemon's messages for it
        // from the moment it is back, however soon the daemon gets there.
        let first = try MosquittoSubscriber(broker: broker, topics: ["stepd/late/minute"],
                                            arguments: ["-c", "-i", "stepd-test-late", "-q", "1"])
        try pollUntil("the subscriber's SUBSCRIBE", timeout: 10, every: 0.02) { broker.log.contains("Received SUBSCRIBE from stepd-test-late") }
        first.stop()
        broker.stop()

        // A history with three finished minutes not yet sent: a first run makes the database, then its outbox mark
        // is put ten minutes back and three minute bins after it (Python's sqlite3 on the stopped daemon's file).
        let absent = ["--device", "stepd-test-absent", "--no-gps", "--state-dir", state]
        let url = "mqtt://127.0.0.1:\(broker.port)"
        let made = try Daemon(arguments: absent, directory: directory, socketName: "made.sock")
        XCTAssertEqual(made.terminate(), 0, made.log)
        let now = Date().timeIntervalSince1970
        let minute = Int(now / 60)
        let queued = [minute - 6, minute - 5, minute - 4]
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("INSERT OR REPLACE INTO mqtt_outbox_mark (id, minute) VALUES (1, ?)", (\(minute - 10),))
            db.executemany("INSERT OR REPLACE INTO minute_bin (minute, steps, distance_m) VALUES (?, ?, ?)",
                           [(\(queued[0]), 91, 63.0), (\(queued[1]), 104, 72.5), (\(queued[2]), 87, 60.1)])
            db.commit()
            """
        let filled = try runCommand("/usr/bin/env", ["python3", "-c", script, state + "/stepd.sqlite"], timeout: 20)
        XCTAssertEqual(filled.status, 0, filled.stderr)

        let daemon = try Daemon(arguments: absent + ["--mqtt-url", url, "--mqtt-device-id", "late", "--mqtt-keepalive-s", "5"],
                                directory: directory)
        defer { daemon.terminate() }
        // Nobody listens: it waits, says why, and says when it tries next; the three minutes are in the outbox.
        // (Not fatal when it does not, so that the rest shows whether the broker is reached when it comes.)
        var link: [String: Any] = [:]
        XCTAssertNoThrow(try pollUntil("mqtt.error to say why it waits", timeout: 15, every: 0.2, detail: "\(link)") {
            link = try mqtt(daemon)
            return (link["error"] as? String)?.contains("next try in") == true && link["queued"] as? Int == 3
        })
        XCTAssertEqual(link["state"] as? String, "connecting", "\(link)")
        let error = link["error"] as? String ?? ""
        XCTAssertTrue(error.hasPrefix("connection refused, next try in "), error)
        // The waits double: after tries at 0, 1, 3 and 7 s the daemon waits 8 s, then 16.
        func nextTry(_ link: [String: Any]) -> Int? {
            (link["error"] as? String)?.split(separator: " ").dropLast().last.flatMap { Int($0) }
        }
        try pollUntil("the wait between tries to double to 8 s", timeout: 40, every: 0.2, detail: "\(link)") {
            link = try mqtt(daemon)
            return (nextTry(link) ?? 0) >= 8
        }
        XCTAssertEqual(link["state"] as? String, "connecting", "\(link)")
        XCTAssertTrue([8, 16].contains(nextTry(link) ?? -1), "\(link)")

        try broker.start()
        let brokerStarted = Date()
        let subscriber = try MosquittoSubscriber(broker: broker, topics: ["stepd/late/minute"],
                                                 arguments: ["-c", "-i", "stepd-test-late", "-q", "1"])
        defer { subscriber.stop() }
        let keys = queued.map { "late/" + Timestamp.string(Date(timeIntervalSince1970: Double($0) * 60)) }
        try subscriber.waitFor("the three queued minutes", timeout: 45) { messages in
            keys.allSatisfy { key in messages.contains { $0.payload.contains("\"key\":\"\(key)\"") } }
        }
        try daemon.waitUntil(timeout: max(1, 45 - Date().timeIntervalSince(brokerStarted)), "connected, an empty outbox") {
            let link = $0["mqtt"] as? [String: Any]
            return link?["state"] as? String == "connected" && link?["queued"] as? Int == 0 && link?["error"] == nil
        }
        let took = Date().timeIntervalSince(brokerStarted)
        print("MQTTLateBrokerTests: connected and 3 queued minutes delivered \(String(format: "%.1f", took)) s after the broker started")
        XCTAssertLessThan(took, 45)
        let steps = subscriber.messages.compactMap { message -> Int? in
            (try? JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])?["steps"] as? Int
        }
        XCTAssertEqual(Array(steps.prefix(3)), [91, 104, 87], "\(subscriber.messages)")
    }
}
