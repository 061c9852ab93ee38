import Foundation
import StepProtocol
import XCTest

/// stepd publishing to a real Mosquitto broker on loopback, read back with mosquitto_sub: the retained
/// topics, the last will on kill -9, TLS with a test CA, and no minute lost or reordered through broker
/// restarts and a daemon killed.
final class MQTTTests: XCTestCase {
    func status(_ daemon: Daemon) throws -> [String: Any] {
        try daemon.connect().request(["cmd": "status"])["mqtt"] as? [String: Any] ?? [:]
    }

    func waitForLink(_ daemon: Daemon, _ state: String, timeout: TimeInterval = 20) throws {
        try daemon.waitUntil(timeout: timeout, "mqtt.state \(state)") { ($0["mqtt"] as? [String: Any])?["state"] as? String == state }
    }

    func waitForRetained(_ broker: MosquittoBroker, _ topic: String, _ payload: String, arguments: [String] = []) throws {
        var last: String?
        try pollUntil("retained \(topic) to be \(payload)", timeout: 10, detail: "it is \(last ?? "absent")") {
            last = try retainedMessages(broker: broker, topics: [topic], arguments: arguments)[topic]
            return last == payload
        }
    }

    /// The outage test (docs/fleet.md, "When the link drops"): the bundled walk (data/walk-inhand.csv.gz, 100 s of
    /// real walking, so that it runs on a clean clone too) replayed in a loop at 5× real time, so the daemon walks
    /// for as long as the test runs; the broker stopped and started 20 times, the daemon killed with -9 once.
    /// Afterwards the subscriber, dropping duplicates by key, holds exactly the daemon's minute bins from
    /// `history`, in order, two minutes or more. On the way: the retained status, steps and Home Assistant
    /// discovery, `offline` from the last will after kill -9 and from a clean stop.
    ///
    /// Why it takes 40-130 s (it depends on where in a minute it starts) and cannot get shorter without testing
    /// less: the bins are wall-clock minutes, and the last one with steps is sent only when it is final, 12 s
    /// after its end (FinishedMinutes.delaySeconds). So the test lasts the 20 restarts (each at least
    /// libmosquitto's 1 s reconnect delay, ~25 s in all), then, when they all fell in one minute, until the next
    /// begins (one minute cannot show the order), then up to 60 s until the minute in progress ends, then 12 s.
    /// Stopping the replay just before a minute's end changes nothing (that end is the same wait); leaving the
    /// minute in progress out of the comparison, or doing the last restarts after the replay, would save the
    /// 0-60 s but no longer check every minute of the replay, the minute of the kill among them, through the
    /// outages.
    func testNoMinuteLostThroughSixBrokerRestartsAndAKill9() throws {
        let recording = Binaries.bundledRecording
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        let began = Date()
        // A persistent session (-c) at QoS 1: the broker keeps the subscriber's messages across its restarts.
        let subscriber = try MosquittoSubscriber(broker: broker, topics: ["stepd/outage/minute"],
                                                 arguments: ["-c", "-i", "stepd-test-fleet", "-q", "1"])
        try waitForBrokerLog(broker, "Received SUBSCRIBE from stepd-test-fleet")
        let state = directory.file("state")
        let mqtt = ["--no-gps", "--state-dir", state, "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                    "--mqtt-device-id", "outage", "--mqtt-keepalive-s", "5", "--mqtt-homeassistant"]
        func replaying(_ name: String) throws -> Daemon {
            try Daemon(arguments: ["--replay", recording, "--speed", "5", "--loop"] + mqtt, directory: directory, socketName: name)
        }
        var daemon = try replaying("a.sock")
        try waitForLink(daemon, "connected")

        // Retained: the status, STEPS, and Home Assistant's sensors: no floors (no barometer), no tracker (--no-gps).
        try waitForRetained(broker, "stepd/outage/status", "online")
        let retained = try retainedMessages(broker: broker, topics: ["stepd/outage/#", "homeassistant/#"])
        XCTAssertTrue(retained["stepd/outage/steps"]?.contains("\"class\":\"STEPS\"") == true, "\(retained)")
        let discovery = retained.keys.filter { $0.hasPrefix("homeassistant/") }.sorted()
        XCTAssertEqual(discovery, ["activity", "cadence", "distance", "steps", "steps_today"].map { "homeassistant/sensor/stepd_outage/\($0)/config" },
                       "\(retained.keys)")
        let stepsConfig = try JSONSerialization.jsonObject(with: Data((retained["homeassistant/sensor/stepd_outage/steps/config"] ?? "{}").utf8)) as? [String: Any]
        XCTAssertEqual(stepsConfig?["state_topic"] as? String, "stepd/outage/steps")
        XCTAssertEqual((stepsConfig?["device"] as? [String: Any])?["identifiers"] as? [String], ["stepd_outage"])

        // Six restarts, one of them with the daemon killed: the back-off's own timing is ClockDrivenTests'.
        for restart in 1...6 {
            broker.stop()
            try waitForLink(daemon, "disconnected")
            try broker.start()
            try waitForLink(daemon, "connected")
            if restart == 3 {
                // kill -9: no goodbye, so the broker publishes the last will.
                daemon.terminate(signal: SIGKILL)
                try waitForRetained(broker, "stepd/outage/status", "offline")
                daemon = try replaying("b.sock")
                try waitForLink(daemon, "connected")
                try waitForRetained(broker, "stepd/outage/status", "online")
            }
        }
        // Walking into a second minute, should the restarts all have fallen in one.
        try pollUntil("the walk to reach a second minute and 100 steps", timeout: 90, every: 1) {
            let history = try daemon.connect().request(["cmd": "history", "from": Timestamp.string(began.addingTimeInterval(-120)),
                                                        "bin": "minute"])
            return (history["bins"] as? [[String: Any]] ?? []).count >= 2 && history["steps"] as? Int ?? 0 > 100
        }
        XCTAssertEqual(daemon.terminate(), 0)
        try waitForRetained(broker, "stepd/outage/status", "offline")

        // The history is final now: an idle daemon (no replay, no accelerometer) sends what is left when its
        // minute is over.
        let idle = try Daemon(arguments: ["--device", "stepd-test-absent"] + mqtt, directory: directory, socketName: "c.sock")
        let from = Timestamp.string(began.addingTimeInterval(-120))
        let history = try idle.connect().request(["cmd": "history", "from": from, "bin": "minute"])
        let bins = try XCTUnwrap(history["bins"] as? [[String: Any]], "\(history)")
        let expected = bins.compactMap { bin -> (Date, Int, Double)? in
            guard let start = (bin["start"] as? String).flatMap(Timestamp.date) else { return nil }
            return (start, bin["steps"] as? Int ?? -1, bin["distance_m"] as? Double ?? -1)
        }
        XCTAssertGreaterThanOrEqual(expected.count, 2, "one minute shows no order")
        XCTAssertGreaterThan(history["steps"] as? Int ?? 0, 100, "\(history)")
        let lastKey = "outage/" + Timestamp.string(try XCTUnwrap(expected.last?.0))
        // The finished minute, not the partial one a clean stop sent under the same key (docs/fleet.md).
        try subscriber.waitFor("the last minute \(lastKey)", timeout: 90) {
            $0.contains { $0.payload.contains("\"key\":\"\(lastKey)\"") && !$0.payload.contains("\"partial\":true") }
        }
        try idle.waitUntil(timeout: 20, "an empty outbox") { ($0["mqtt"] as? [String: Any])?["queued"] as? Int == 0 }

        // Drop duplicates by key; a duplicate must be the same message.
        var first: [String: [String: Any]] = [:]
        var order: [String] = []
        var duplicates = 0
        for message in subscriber.messages {
            let record = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])
            let key = try XCTUnwrap(record["key"] as? String)
            // A minute sent at a clean stop before it was finished; the finished one replaces it (docs/fleet.md).
            if record["partial"] as? Bool == true { continue }
            if let earlier = first[key] {
                duplicates += 1
                XCTAssertEqual(NSDictionary(dictionary: earlier), NSDictionary(dictionary: record), "a duplicate of \(key) differs")
            } else {
                first[key] = record
                order.append(key)
            }
        }
        let received = order.compactMap { key -> (Date, Int, Double)? in
            guard let record = first[key], let start = (record["start"] as? String).flatMap(Timestamp.date) else { return nil }
            return (start, record["steps"] as? Int ?? -2, record["distance_m"] as? Double ?? -2)
        }
        XCTAssertEqual(received.map(\.0), expected.map(\.0), "minutes received differ from history's, or are out of order")
        XCTAssertEqual(received.map(\.1), expected.map(\.1), "steps per minute differ from history's")
        XCTAssertEqual(received.map(\.2), expected.map(\.2), "distance per minute differs from history's")
        print("MQTTTests: \(expected.count) minutes, \(history["steps"] ?? 0) steps, \(duplicates) duplicates dropped, "
              + "\(Int(Date().timeIntervalSince(began))) s")
        subscriber.stop()
        idle.terminate()
    }

    func waitForBrokerLog(_ broker: MosquittoBroker, _ text: String) throws {
        try pollUntil("the broker's log to say \"\(text)\"", timeout: 10, every: 0.02, detail: String(broker.log.suffix(2000))) {
            broker.log.contains(text)
        }
    }

    /// mqtts:// with a CA made at test time, a client certificate the broker requires, and a user whose password
    /// comes from a file only the service may read; every mqtt_* key from stepd.conf alone (ConfigKeysTests).
    /// While the replay walks, `<prefix>/steps` comes at most every 5 s, and does come every 5 s. The same
    /// password file readable by its group, or owned by another user, is refused with exit status 78. ~35 s.
    func testTLSWithATestCAClientCertificateAndPasswordFileFromStepdConf() throws {
        let directory = try TemporaryDirectory()
        try makeTestCertificates(in: directory, signed: [("server", "/CN=127.0.0.1", "IP:127.0.0.1"), ("client", "/CN=wearable-07", nil)])
        let passwords = directory.file("broker-passwords")
        let made = try runCommand("/usr/bin/mosquitto_passwd", ["-c", "-b", passwords, "wearable-07", "correct horse"], timeout: 10)
        XCTAssertEqual(made.status, 0, made.stderr)
        let broker = try MosquittoBroker(directory: directory, listener: [
            "cafile \(directory.file("ca.crt"))", "certfile \(directory.file("server.crt"))", "keyfile \(directory.file("server.key"))",
            "require_certificate true", "password_file \(passwords)",
        ], anonymous: false)
        let tls = ["--cafile", directory.file("ca.crt"), "--cert", directory.file("client.crt"), "--key", directory.file("client.key"),
                   "-u", "wearable-07", "-P", "correct horse"]
        let steps = try MosquittoSubscriber(broker: broker, topics: ["lab/wearable-07/steps"],
                                            arguments: tls + ["-q", "1", "-i", "stepd-test-steps"])
        try waitForBrokerLog(broker, "Received SUBSCRIBE from stepd-test-steps")
        let passwordFile = directory.file("mqtt-password")
        try "correct horse\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
        let settings = [
            "replay": Binaries.bundledRecording, "speed": "4", "loop": "true", "no_gps": "true",
            "mqtt_url": "mqtts://127.0.0.1:\(broker.port)", "mqtt_device_id": "wearable-07",
            "mqtt_topic_prefix": "lab/wearable-07", "mqtt_keepalive_s": "17",
            "mqtt_ca_file": directory.file("ca.crt"), "mqtt_cert_file": directory.file("client.crt"),
            "mqtt_key_file": directory.file("client.key"), "mqtt_username": "wearable-07",
            "mqtt_password_file": passwordFile, "mqtt_homeassistant": "true",
        ]
        let config = directory.file("stepd.conf")
        try settings.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: "\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config], directory: directory)
        try waitForLink(daemon, "connected")
        let link = try status(daemon)
        XCTAssertEqual(link["broker"] as? String, "mqtts://127.0.0.1:\(broker.port)")
        XCTAssertEqual(link["device_id"] as? String, "wearable-07")
        XCTAssertEqual(link["topic_prefix"] as? String, "lab/wearable-07")
        try waitForRetained(broker, "lab/wearable-07/status", "online", arguments: tls)
        let discovery = try retainedMessages(broker: broker, topics: ["homeassistant/#"], arguments: tls)
        XCTAssertNotNil(discovery["homeassistant/sensor/stepd_wearable-07/steps/config"], "\(discovery.keys)")
        // The keepalive the broker was asked for: mosquitto logs it as "k17".
        try waitForLog("as stepd-wearable-07 (p2, c1, k17, u'wearable-07')", in: { broker.log })
        let line = try runCommand(Binaries.stepctl, ["status", "--socket", daemon.socketPath], timeout: 10).stdout
        XCTAssertTrue(line.contains("mqtt:     connected to mqtts://127.0.0.1:\(broker.port) as lab/wearable-07; "), line)
        try checkStepsRate(steps)
        XCTAssertEqual(daemon.terminate(), 0)
        steps.stop()

        // Anyone in the file's group could read the password: refused, with what to do.
        chmod(passwordFile, 0o640)
        let refused = try runCommand(Binaries.stepd, ["--config", config, "--socket", directory.file("refused.sock"),
                                                      "--state-dir", directory.file("refused")], timeout: 20)
        XCTAssertEqual(refused.status, 78, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("the MQTT password file \(passwordFile) may be read by others (mode 640)"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("chmod 600"), refused.stderr)

        // Private to another user: that user could read it, or open it to others. The tests run as root; the
        // uid-only check is unit-tested (FleetTests) for anyone.
        guard geteuid() == 0 else { return }
        chmod(passwordFile, 0o600)
        XCTAssertEqual(chown(passwordFile, 65_534, gid_t.max), 0, String(cString: strerror(errno)))
        let foreign = try runCommand(Binaries.stepd, ["--config", config, "--socket", directory.file("refused.sock"),
                                                      "--state-dir", directory.file("refused")], timeout: 20)
        XCTAssertEqual(foreign.status, 78, foreign.stderr)
        XCTAssertTrue(foreign.stderr.contains("the MQTT password file \(passwordFile) belongs to "), foreign.stderr)
        XCTAssertTrue(foreign.stderr.contains("chown root \(passwordFile)"), foreign.stderr)
    }

    /// `<prefix>/steps` while walking (FleetPublisher.stepsIntervalSeconds): never within 5 s of the message
    /// before it, and the newest at the end of each 5 s, whatever the rate of STEPS (a batch a quarter second at 4×
    /// replay). The message sent on connecting and a walk's end go at once; the next walking one waits 5 s after
    /// them. The subscriber was there before the daemon connected, so every message is seen as it was sent.
    private func checkStepsRate(_ subscriber: MosquittoSubscriber) throws {
        var messages: [MosquittoSubscriber.Message] = []
        func walking(_ m: MosquittoSubscriber.Message) -> Bool { m.payload.contains("\"activity\":\"walking\"") }
        func sequence() -> String {
            let start = messages.first?.received.timeIntervalSince1970 ?? 0
            return messages.map { message in
                let steps = (try? JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])?["steps"] ?? "?"
                return String(format: "%.2f s %@ %@", message.received.timeIntervalSince1970 - start,
                              walking(message) ? "walking" : "not walking", "\(steps)")
            }.joined(separator: "; ")
        }
        try pollUntil("six STEPS messages while walking", timeout: 45, every: 0.5, detail: sequence()) {
            messages = subscriber.received
            return messages.filter(walking).count >= 6
        }
        XCTAssertTrue(messages.allSatisfy { $0.payload.contains("\"class\":\"STEPS\"") && $0.qos == 1 }, "\(messages.map(\.payload))")
        var walkingGaps: [Double] = []
        for (before, after) in zip(messages, messages.dropFirst()) where walking(after) {
            let gap = after.received.timeIntervalSince(before.received)
            // 0.5 s for the broker's and mosquitto_sub's delays, which differ between two messages.
            XCTAssertGreaterThan(gap, 4.5, "two STEPS \(gap) s apart while walking: \(sequence())")
            if walking(before) { walkingGaps.append(gap) }
        }
        guard !walkingGaps.isEmpty else { return XCTFail("no two STEPS in a row while walking: \(messages.map(\.payload))") }
        let median = walkingGaps.sorted()[walkingGaps.count / 2]
        XCTAssertLessThan(median, 6.5, "STEPS while walking should come every 5 s: \(walkingGaps)")
    }
}
