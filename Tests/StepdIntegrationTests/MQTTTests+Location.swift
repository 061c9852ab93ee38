import Foundation
import StepProtocol
import XCTest

/// `<prefix>/position` and `<prefix>/visit` from a real gpsd (gpsfake replaying a walk made by Tests/fixtures/nmea-walk)
/// through a real Mosquitto: one daemon, one broker, one gpsfake.
extension MQTTTests {
    /// A message's JSON payload.
    private func object(_ message: MosquittoSubscriber.Message) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any], message.payload)
    }

    /// The same fix: POSITION's time and coordinates (`age_s` differs with the moment it was written).
    private func sameFix(_ a: [String: Any], _ b: [String: Any]?) -> Bool {
        guard let b else { return false }
        return ["time", "lat", "lon"].allSatisfy { (a[$0] as? NSObject)?.isEqual(b[$0]) == true }
    }

    /// The position is published retained from accepted fixes, at most every 10 s while ~33 fixes a second arrive,
    /// and the newest fix is the one left retained. The visit's arrival and departure go through the outbox at
    /// QoS 1 with their keys: the broker is stopped once two positions have arrived, before the stay, so the
    /// visit is detected while the link is down and reaches the subscriber when the broker is back. ~25 s.
    func testPositionRetainedAndRateLimitedAndAVisitThroughTheOutbox() throws {
        try GPSDFake.requireTools()
        let directory = try TemporaryDirectory()
        // An hour ago (within the retention), on a whole minute.
        let walkStart = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 3600)
        // 550 m at 1.4 m/s is 394 fixes, 12 s or more at gpsfake's 30 ms a fix (3 sentences, 10 ms each): longer than
        // the 10 s between two positions. Then 75 s standing (a visit with --visit-min-stay-s 60) and a walk away.
        let (log, truth) = try NMEAWalk.generate(["--start-time", Timestamp.string(walkStart), "--hdop", "0.25", "--jitter-m", "1",
                                                  "walk:550", "stay:75", "walk:100"], into: directory, name: "visit")
        let ends = try XCTUnwrap(truth["segments"] as? [[String: Any]]).compactMap {
            ($0["end"] as? String)?.replacingOccurrences(of: "Z", with: ".000Z")
        }
        let (walkEnd, lastFix) = (try XCTUnwrap(ends.first), try XCTUnwrap(ends.last))
        let broker = try MosquittoBroker(directory: directory)
        let subscriber = try MosquittoSubscriber(broker: broker, topics: ["stepd/gps/position", "stepd/gps/visit"],
                                                 arguments: ["-c", "-i", "stepd-test-gps", "-q", "1"])
        try waitForBrokerLog(broker, "Received SUBSCRIBE from stepd-test-gps")
        let gpsdPort = GPSDFake.freePort()
        let daemon = try Daemon(arguments: ["--gpsd", "127.0.0.1:\(gpsdPort)", "--gps-retry-s", "0.2", "--visit-min-stay-s", "60",
                                            "--visit-radius-m", "30", "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                                            "--mqtt-device-id", "gps"], directory: directory)
        try waitForLink(daemon, "connected")
        let watcher = try daemon.connect()
        _ = try watcher.request(["cmd": "watch", "classes": ["POSITION", "VISIT"]])
        // Held back until the daemon's retry has found gpsd (GPSDFake.play(once:)).
        let fake = try GPSDFake(log: log, port: gpsdPort, cycleSeconds: 0.01, stepped: true, directory: directory)
        defer { fake.stop() }
        try fake.play(once: daemon)

        // The daemon's own events, to the last fix of the log. The broker is stopped once the second position has
        // arrived and the first walk is over (the stay's arrival is 60 fixes later): a short outage, as libmosquitto
        // retries after 1, 2, 4 s..., and one that the whole visit falls in.
        var fixes: [[String: Any]] = []
        var visitEvents: [[String: Any]] = []
        var positionsBeforeOutage: [MosquittoSubscriber.Message] = []
        var visitsBeforeOutage = -1
        let deadline = Date().addingTimeInterval(60)
        while fixes.last?["time"] as? String != lastFix, Date() < deadline {
            let event = try watcher.readObject()
            switch event["class"] as? String {
            case "POSITION": fixes.append(event)
            case "VISIT": visitEvents.append(event)
            default: break
            }
            if visitsBeforeOutage < 0, (fixes.last?["time"] as? String ?? "") >= walkEnd {
                let positions = subscriber.received.filter { $0.topic == "stepd/gps/position" }
                if positions.count >= 2 {
                    broker.stop()
                    positionsBeforeOutage = positions
                    visitsBeforeOutage = visitEvents.count
                }
            }
        }
        XCTAssertEqual(fixes.last?["time"] as? String, lastFix, "the replay did not reach its last fix")

        // Rate-limited: of the hundreds of fixes before the outage, the first went out at once and the next
        // one 10 s later (FleetPublisher.positionIntervalSeconds), the newest then; every one a real fix.
        XCTAssertEqual(visitsBeforeOutage, 0, "the stay began before two positions had arrived")
        XCTAssertEqual(positionsBeforeOutage.count, 2, "\(positionsBeforeOutage.map(\.payload))")
        let first = try object(positionsBeforeOutage[0]), second = try object(positionsBeforeOutage[1])
        let gap = positionsBeforeOutage[1].received.timeIntervalSince(positionsBeforeOutage[0].received)
        XCTAssertGreaterThan(gap, 9.5, "two positions \(gap) s apart")
        XCTAssertEqual(positionsBeforeOutage.map(\.qos), [1, 1])
        for position in [first, second] {
            XCTAssertEqual(position["class"] as? String, "POSITION")
            XCTAssertTrue(fixes.contains { sameFix($0, position) }, "not one of the daemon's fixes: \(position)")
        }
        let between = fixes.filter { ($0["time"] as? String ?? "") > (first["time"] as? String ?? "~")
            && ($0["time"] as? String ?? "") < (second["time"] as? String ?? "") }
        XCTAssertGreaterThan(between.count, 100, "fixes accepted and not published between the two")

        // The visit came and went with the broker down: it waits in the outbox.
        let arrival = try XCTUnwrap(visitEvents.first { $0["departure"] as? String == nil }, "\(visitEvents)")
        let departure = try XCTUnwrap(visitEvents.first { $0["departure"] is String }, "\(visitEvents)")
        let waiting = try status(daemon)
        XCTAssertEqual(waiting["state"] as? String, "disconnected", "\(waiting)")
        XCTAssertEqual(waiting["queued"] as? Int, 2, "the arrival and the departure in the outbox: \(waiting)")

        try broker.start()
        try waitForLink(daemon, "connected")
        let visitTime = try XCTUnwrap(arrival["arrival"] as? String)
        let keys = ["gps/\(visitTime)/arrival", "gps/\(visitTime)/departure"]
        try subscriber.waitFor("the departure") { $0.contains { $0.payload.contains("\"key\":\"\(keys[1])\"") } }
        try daemon.waitUntil(timeout: 10, "an empty outbox") { ($0["mqtt"] as? [String: Any])?["queued"] as? Int == 0 }

        // In order, QoS 1, each key once after dropping duplicates (a message the outage cut before its PUBACK
        // is sent again); the payload is the daemon's VISIT with the key, the device and the event.
        var visits: [String: [String: Any]] = [:]
        var order: [String] = []
        for message in subscriber.received where message.topic == "stepd/gps/visit" {
            XCTAssertEqual(message.qos, 1, message.payload)
            let record = try object(message)
            let key = try XCTUnwrap(record["key"] as? String)
            if visits[key] == nil { order.append(key) }
            visits[key] = record
        }
        XCTAssertEqual(order, keys)
        let stored = try XCTUnwrap(try daemon.connect().request(["cmd": "visits"])["visits"] as? [[String: Any]])
        XCTAssertEqual(stored.count, 1, "\(stored)")
        for (key, event, visit) in [(keys[0], "arrival", arrival), (keys[1], "departure", departure)] {
            var expected = visit.filter { $0.key != "class" }
            expected["key"] = key
            expected["device"] = "gps"
            expected["event"] = event
            XCTAssertEqual(NSDictionary(dictionary: visits[key] ?? [:]), NSDictionary(dictionary: expected))
        }
        XCTAssertEqual(NSDictionary(dictionary: departure.filter { $0.key != "class" }),
                       NSDictionary(dictionary: stored.first?.filter { $0.key != "class" } ?? [:]), "the departure is history's visit")

        // Retained: the newest fix (the last of the log), sent on connecting; the visit is not retained.
        var retained: [String: String] = [:]
        let until = Date().addingTimeInterval(10)
        repeat {
            retained = try retainedMessages(broker: broker, topics: ["stepd/gps/position", "stepd/gps/visit"])
        } while retained["stepd/gps/position"]?.contains("\"time\":\"\(lastFix)\"") != true && Date() < until
        let position = try XCTUnwrap(retained["stepd/gps/position"], "no retained position")
        XCTAssertTrue(sameFix(try XCTUnwrap(fixes.last), try JSONSerialization.jsonObject(with: Data(position.utf8)) as? [String: Any]),
                      "retained \(position), newest fix \(fixes.last ?? [:])")
        XCTAssertNil(retained["stepd/gps/visit"])
        subscriber.stop()
        XCTAssertEqual(daemon.terminate(), 0)
    }
}
