import Foundation
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProtocol
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The MQTT publisher's pure parts, without a broker: broker URLs, topics, payloads and keys, the outbox
/// window's order, the throttle, when a minute is finished, Home Assistant discovery, the flags, the password file.
/// The outbox in a real store: FleetOutboxTests.
final class FleetTests: XCTestCase {
    func testBrokerURLs() throws {
        XCTAssertEqual(try BrokerURL(parsing: "mqtt://broker.local"), BrokerURL(tls: false, host: "broker.local", port: 1883))
        XCTAssertEqual(try BrokerURL(parsing: "mqtts://broker.local"), BrokerURL(tls: true, host: "broker.local", port: 8883))
        XCTAssertEqual(try BrokerURL(parsing: "mqtt://10.0.0.2:1884/"), BrokerURL(tls: false, host: "10.0.0.2", port: 1884))
        XCTAssertEqual(try BrokerURL(parsing: "mqtts://[::1]:8884"), BrokerURL(tls: true, host: "::1", port: 8884))
        XCTAssertEqual(try BrokerURL(parsing: "mqtts://[::1]:8884").description, "mqtts://[::1]:8884")
        XCTAssertThrowsError(try BrokerURL(parsing: "http://broker")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .scheme("http://broker")) }
        XCTAssertThrowsError(try BrokerURL(parsing: "mqtt://u:p@broker")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .credentials("mqtt://u:p@broker")) }
        XCTAssertThrowsError(try BrokerURL(parsing: "mqtt://broker:0")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .port("mqtt://broker:0")) }
        XCTAssertThrowsError(try BrokerURL(parsing: "mqtt://broker:x")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .port("mqtt://broker:x")) }
        XCTAssertThrowsError(try BrokerURL(parsing: "mqtt://")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .host("mqtt://")) }
        XCTAssertThrowsError(try BrokerURL(parsing: "mqtt://broker/steps")) { XCTAssertEqual($0 as? BrokerURL.ParseError, .path("mqtt://broker/steps")) }
    }

    /// stepd's MQTTOptions.validate(): the refusals that need no file, each with the flag to change.
    func testFlagsThatCannotWorkAreRefusedBeforeAnyFileIsRead() throws {
        func problem(_ flags: FleetFlags) -> FleetFlags.Problem? {
            do { try flags.check(); return nil } catch { return error }
        }
        let url = "mqtt://broker.local"
        // MQTT is off without a URL: every other flag would be ignored, so it is refused.
        XCTAssertNil(try FleetFlags().check())
        XCTAssertEqual(problem(FleetFlags(deviceID: "w7")), .needsURL(flag: "mqtt-device-id"))
        XCTAssertEqual(problem(FleetFlags(topicPrefix: "lab/w7")), .needsURL(flag: "mqtt-topic-prefix"))
        XCTAssertEqual(problem(FleetFlags(caFile: "/ca.crt")), .needsURL(flag: "mqtt-ca-file"))
        XCTAssertEqual(problem(FleetFlags(keyFile: "/k")), .needsURL(flag: "mqtt-key-file"))
        XCTAssertEqual(problem(FleetFlags(username: "u", passwordFile: "/p")), .needsURL(flag: "mqtt-username"))
        XCTAssertEqual(problem(FleetFlags(homeAssistant: true)), .needsURL(flag: "mqtt-homeassistant"))
        XCTAssertEqual(problem(FleetFlags(homeAssistant: true)).map(String.init(describing:)),
                       "--mqtt-homeassistant needs --mqtt-url: MQTT is off without a broker")

        XCTAssertEqual(problem(FleetFlags(url: "http://broker")), .url(.scheme("http://broker")))
        XCTAssertEqual(problem(FleetFlags(url: url, deviceID: "a/b")), .deviceID("a/b"))
        XCTAssertEqual(problem(FleetFlags(url: url, topicPrefix: "stepd/#")), .topicPrefix("stepd/#"))

        // TLS files with a plain broker: the message gives the mqtts:// URL to write, on the TLS port unless one was chosen.
        XCTAssertEqual(problem(FleetFlags(url: url, caFile: "/ca.crt")),
                       .tlsFileWithoutTLS(flag: "mqtt-ca-file", suggested: "mqtts://broker.local:8883"))
        XCTAssertEqual(problem(FleetFlags(url: "mqtt://broker.local:1884", certFile: "/c", keyFile: "/k")),
                       .tlsFileWithoutTLS(flag: "mqtt-cert-file", suggested: "mqtts://broker.local:1884"))
        XCTAssertEqual(problem(FleetFlags(url: url, keyFile: "/k")).map(String.init(describing:)),
                       "--mqtt-key-file is for TLS: write the broker as mqtts://broker.local:8883")

        // A client certificate needs its key, and the key its certificate.
        XCTAssertEqual(problem(FleetFlags(url: "mqtts://broker.local", certFile: "/c")), .certificateWithoutKey)
        XCTAssertEqual(problem(FleetFlags(url: "mqtts://broker.local", keyFile: "/k")), .certificateWithoutKey)
        // MQTT sends a password only with a user name.
        XCTAssertEqual(problem(FleetFlags(url: url, passwordFile: "/p")), .passwordFileWithoutUsername)
        XCTAssertTrue("\(FleetFlags.Problem.passwordFileWithoutUsername)".contains("--mqtt-username"))

        // What works: the broker comes back.
        XCTAssertEqual(try FleetFlags(url: url, deviceID: "w7", username: "u", passwordFile: "/p", homeAssistant: true).check(),
                       BrokerURL(tls: false, host: "broker.local", port: 1883))
        XCTAssertEqual(try FleetFlags(url: "mqtts://broker.local", caFile: "/ca", certFile: "/c", keyFile: "/k").check()?.tls, true)
    }

    func testTopicsAndDeviceIDs() {
        let topics = FleetTopics(prefix: "lab/stepd/w7/")
        XCTAssertEqual([topics.status, topics.steps, topics.position, topics.visit, topics.minute],
                       ["lab/stepd/w7/status", "lab/stepd/w7/steps", "lab/stepd/w7/position", "lab/stepd/w7/visit", "lab/stepd/w7/minute"])
        XCTAssertEqual(topics.topic(of: .minute), "lab/stepd/w7/minute")
        XCTAssertEqual(FleetTopics.defaultPrefix(deviceID: "abc"), "stepd/abc")
        XCTAssertTrue(FleetTopics.isValidDeviceID("0f3a9c-wearable_7"))
        XCTAssertFalse(FleetTopics.isValidDeviceID("a/b"))
        XCTAssertFalse(FleetTopics.isValidDeviceID("a+"))
        XCTAssertFalse(FleetTopics.isValidDeviceID(""))
        XCTAssertFalse(FleetTopics.isValidTopic("stepd/#"))
        XCTAssertTrue(FleetTopics.isValidTopic("stepd/a"))
    }

    func testMinutePayloadCarriesItsKeyAndHistoryRounding() throws {
        // Unix minute 29_692_800 is 2026-06-16T00:00:00Z.
        let (key, payload) = FleetPayloads.minute(device: "w7", minute: 29_692_800, steps: 97, distanceMeters: 68.28799999, floors: nil)
        XCTAssertEqual(key, "w7/2026-06-16T00:00:00.000Z")
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
        XCTAssertEqual(object["key"] as? String, key)
        XCTAssertEqual(object["device"] as? String, "w7")
        XCTAssertEqual(object["start"] as? String, "2026-06-16T00:00:00.000Z")
        XCTAssertEqual(object["end"] as? String, "2026-06-16T00:01:00.000Z")
        XCTAssertEqual(object["steps"] as? Int, 97)
        XCTAssertEqual(object["distance_m"] as? Double, 68.288)
        XCTAssertNil(object["floors"])
        // A minute sent at a clean stop before it was finished says so; the finished one has the same key.
        let partial = FleetPayloads.minute(device: "w7", minute: 29_692_800, steps: 40, distanceMeters: 28, floors: nil, partial: true)
        XCTAssertEqual(partial.key, key)
        XCTAssertTrue(partial.payload.hasSuffix(",\"partial\":true}"), partial.payload)
        XCTAssertFalse(payload.contains("partial"), payload)
        // The same minute makes the same key, whatever its figures: that is how a duplicate is recognised.
        XCTAssertEqual(FleetPayloads.minute(device: "w7", minute: 29_692_800, steps: 1, distanceMeters: 0, floors: 2).key, key)
        XCTAssertNotEqual(FleetPayloads.minute(device: "w8", minute: 29_692_800, steps: 97, distanceMeters: 0, floors: nil).key, key)
    }

    func testVisitPayloadsHaveOneKeyPerEvent() throws {
        let arrival = VisitMessage(arrival: "2026-06-15T08:00:00.000Z", departure: nil, lat: 51.75, lon: -1.25, radius_m: 12.5,
                                   duration_s: nil, fixes: 40)
        var departure = arrival
        departure.departure = "2026-06-15T09:00:00.000Z"
        departure.duration_s = 3600
        let a = FleetPayloads.visit(device: "w7", arrival)
        let d = FleetPayloads.visit(device: "w7", departure)
        XCTAssertEqual(a.key, "w7/2026-06-15T08:00:00.000Z/arrival")
        XCTAssertEqual(d.key, "w7/2026-06-15T08:00:00.000Z/departure")
        XCTAssertTrue(a.payload.contains("\"departure\":null"), a.payload)
        XCTAssertTrue(d.payload.contains("\"event\":\"departure\""), d.payload)
    }

    private func rows(_ ids: ClosedRange<Int64>) -> [OutboxRow] {
        ids.map { OutboxRow(id: $0, kind: .minute, key: "k\($0)", time: Date(timeIntervalSince1970: Double($0) * 60), payload: "{}") }
    }

    func testOutboxWindowSendsInOrderWithinItsCapacity() {
        var window = OutboxWindow(capacity: 3)
        XCTAssertEqual(window.readRequest(), 6)
        XCTAssertNil(window.readRequest(), "one read at a time")
        window.received(rows(1...6), limit: 6, generation: window.generation)
        var sent: [Int64] = []
        var mid: Int32 = 100
        while let row = window.next() { sent.append(row.id); window.sent(row, messageID: mid); mid += 1 }
        XCTAssertEqual(sent, [1, 2, 3], "no more than the capacity waits for a PUBACK")
        XCTAssertEqual(window.acknowledged(messageID: 100), 1)
        XCTAssertNil(window.acknowledged(messageID: 100), "a PUBACK counts once")
        XCTAssertNil(window.acknowledged(messageID: 7), "a message that is no outbox row")
        let fourth = window.next()
        XCTAssertEqual(fourth?.id, 4, "an acknowledgement makes room for the next")
        window.sent(fourth!, messageID: mid)
        XCTAssertNil(window.next())
    }

    func testOutboxWindowStartsAgainFromTheOldestUnacknowledgedRowOnReconnecting() {
        var window = OutboxWindow(capacity: 2)
        let limit = window.readRequest()!
        window.received(rows(1...3), limit: limit, generation: window.generation)
        let first = window.next()!, second = window.next()!
        window.sent(first, messageID: 1)
        window.sent(second, messageID: 2)
        XCTAssertEqual(window.acknowledged(messageID: 1), 1)
        let before = window.generation
        window.restart()
        XCTAssertNil(window.acknowledged(messageID: 2), "a PUBACK of the last connection is not this one's")
        XCTAssertEqual(window.cursor, 0)
        // A read asked for before the reconnection comes back late: ignored.
        window.received(rows(5...5), limit: 4, generation: before)
        XCTAssertNil(window.next())
        let again = window.readRequest()!
        // Row 1 was acknowledged and removed; row 2 is still in the store, so it goes again, first.
        window.received(rows(2...3), limit: again, generation: window.generation)
        XCTAssertEqual(window.next()?.id, 2)
        XCTAssertEqual(window.next()?.id, 3)
    }

    func testOutboxWindowSkipsRowsAcknowledgedButNotYetRemovedAndReadsOnWhenRowsAreAdded() {
        var window = OutboxWindow(capacity: 2)
        let limit = window.readRequest()!
        window.received(rows(1...3), limit: limit, generation: window.generation) { $0 == 1 }
        XCTAssertEqual(window.next()?.id, 2)
        XCTAssertEqual(window.cursor, 3)
        let row = window.next()!
        window.unsent(row)
        XCTAssertEqual(window.next()?.id, 3, "a row the client refused goes first next time")
        XCTAssertNil(window.readRequest(), "the window is full")
        _ = window.acknowledged(messageID: 0)
        var fresh = OutboxWindow(capacity: 2)
        let n = fresh.readRequest()!
        fresh.received([], limit: n, generation: fresh.generation)
        XCTAssertNil(fresh.readRequest(), "the store had nothing more: no read until a row is added")
        fresh.rowAdded()
        XCTAssertEqual(fresh.readRequest(), 4)
    }

    func testThrottleSendsAtMostOncePerIntervalAndTheNewestAtItsEnd() {
        var throttle = PublishThrottle(intervalSeconds: 5)
        XCTAssertEqual(throttle.offer(now: 100), .now)
        XCTAssertEqual(throttle.offer(now: 101), .at(105))
        XCTAssertEqual(throttle.offer(now: 102), .pending)
        XCTAssertTrue(throttle.trailingFired(due: 105, now: 105))
        XCTAssertEqual(throttle.offer(now: 106), .at(110))
        XCTAssertTrue(throttle.trailingFired(due: 110, now: 110))
        XCTAssertEqual(throttle.offer(now: 115), .now)
        throttle.forced(now: 116)
        XCTAssertEqual(throttle.offer(now: 117), .at(121))
    }

    /// A forced send (a walk's end, a connection) while a trailing one is pending: the trailing one is dropped,
    /// else it would follow within the interval (seen as two STEPS 0.27 s apart in MQTTTests: a walk ended and
    /// began again at a replay's loop while the timer ran).
    func testThrottleDropsATrailingSendAForcedOneHasOvertaken() {
        var throttle = PublishThrottle(intervalSeconds: 5)
        XCTAssertEqual(throttle.offer(now: 100), .now)
        XCTAssertEqual(throttle.offer(now: 101), .at(105))
        throttle.forced(now: 104.7)
        XCTAssertEqual(throttle.offer(now: 104.9), .at(109.7), "the next waits the interval after the forced send")
        XCTAssertFalse(throttle.trailingFired(due: 105, now: 105), "the first timer no longer counts")
        XCTAssertTrue(throttle.trailingFired(due: 109.7, now: 109.7))
        throttle.forced(now: 111)
        XCTAssertEqual(throttle.offer(now: 112), .at(116))
        throttle.forced(now: 113)
        XCTAssertFalse(throttle.trailingFired(due: 116, now: 116), "overtaken, with nothing offered since")
        XCTAssertEqual(throttle.offer(now: 118), .now)
    }

    func testAMinuteIsFinishedOnceNoHeldBackStepCanJoinIt() {
        // 2026-06-16T00:01:00Z is the end of minute 29_692_800.
        let end = Date(timeIntervalSince1970: 29_692_801 * 60)
        // The default detector (peak) holds a bout's first steps back up to 6 × 1.5 s, plus a second.
        let finished = FinishedMinutes(holdBackSeconds: Engine().stepHoldBackSeconds)
        let delay = finished.delaySeconds
        XCTAssertEqual(delay, 10 + 2)
        XCTAssertEqual(finished.newest(at: end.addingTimeInterval(delay - 0.1)), 29_692_799)
        XCTAssertEqual(finished.newest(at: end.addingTimeInterval(delay)), 29_692_800)
        XCTAssertEqual(finished.nextDeadline(after: 29_692_799), end.addingTimeInterval(delay))
    }

    func testHomeAssistantDiscoveryMakesSixSensorsAndATrackerAsOneDevice() throws {
        let discovery = HomeAssistantDiscovery(deviceID: "w7", deviceName: "pinephone", entityName: "pinephone-57fe1661",
                                               topics: FleetTopics(prefix: "stepd/w7"))
        let messages = discovery.messages
        XCTAssertEqual(messages.map(\.topic), ["steps", "steps_today", "distance", "cadence", "activity", "floors"].map {
            "homeassistant/sensor/stepd_w7/\($0)/config"
        } + ["homeassistant/device_tracker/stepd_w7/position/config"])
        var identifiers = Set<String>()
        for message in messages {
            let config = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])
            identifiers.formUnion((config["device"] as? [String: Any])?["identifiers"] as? [String] ?? [])
            XCTAssertEqual(config["availability_topic"] as? String, "stepd/w7/status")
        }
        XCTAssertEqual(identifiers, ["stepd_w7"])
        let configs = try messages.map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any]) }
        // Entity ids from the host name and the short id; the unique ids keep the whole device id.
        XCTAssertEqual(configs.map { $0["object_id"] as? String }, ["steps", "steps_today", "distance", "cadence", "activity", "floors", "position"].map {
            "pinephone_57fe1661_\($0)"
        })
        XCTAssertEqual(configs[0]["unique_id"] as? String, "stepd_w7_steps")
        // Steps today falls to 0 at midnight: total_increasing, which HA's statistics take as a new cycle. A field a
        // message lacks gives an empty string, which HA's MQTT sensor ignores for a numeric sensor: never this.state,
        // which is "unknown" in a Home Assistant just started.
        XCTAssertEqual(configs[1]["state_class"] as? String, "total_increasing")
        XCTAssertEqual(configs[1]["value_template"] as? String,
                       "{{ value_json.today.steps if value_json is mapping and value_json.today is defined and value_json.today.steps is defined else '' }}")
        XCTAssertEqual(configs[5]["value_template"] as? String,
                       "{{ value_json.floors_ascended if value_json is mapping and value_json.floors_ascended is defined else '' }}")
        XCTAssertFalse(messages.contains { $0.payload.contains("this.state") })
        XCTAssertEqual(configs[2]["suggested_display_precision"] as? Int, 0, "distance in whole metres")
        XCTAssertEqual(configs[2]["device_class"] as? String, "distance")
        // Activity is an enum with its options, and no unit or state class (HA refuses those for an enum).
        XCTAssertEqual(configs[4]["device_class"] as? String, "enum")
        XCTAssertEqual(configs[4]["options"] as? [String], ["walking", "stationary"])
        XCTAssertNil(configs[4]["state_class"])
        XCTAssertNil(configs[4]["unit_of_measurement"])
        XCTAssertEqual((configs[0]["device"] as? [String: Any])?["name"] as? String, "pinephone", "the host name is the device's name")
        let tracker = try XCTUnwrap(configs.last)
        XCTAssertEqual(tracker["json_attributes_topic"] as? String, "stepd/w7/position")
        XCTAssertEqual(tracker["source_type"] as? String, "gps")
        // gps_accuracy only from eph_m: without it none, rather than 0, which reads as exact.
        let attributes = try XCTUnwrap(tracker["json_attributes_template"] as? String)
        XCTAssertFalse(attributes.contains("default(0)"), attributes)
        XCTAssertTrue(attributes.contains("{% if value_json.eph_m is defined and value_json.eph_m is not none %}"), attributes)
    }

    /// The value template of a field nested in STEPS tests each level, so that a message without `today` renders
    /// an empty string rather than failing on a field of an undefined object.
    func testANumericTemplateTestsEveryLevelOfItsField() {
        XCTAssertEqual(HomeAssistantDiscovery.numericTemplate(field: "steps"),
                       "{{ value_json.steps if value_json is mapping and value_json.steps is defined else '' }}")
        XCTAssertEqual(HomeAssistantDiscovery.numericTemplate(field: "today.distance_m"),
                       "{{ value_json.today.distance_m if value_json is mapping and value_json.today is defined and value_json.today.distance_m is defined else '' }}")
    }

    func testHomeAssistantDiscoveryDeclaresOnlyWhatExistsAndRemovesTheRest() throws {
        let discovery = HomeAssistantDiscovery(deviceID: "w7", deviceName: "w7", entityName: "w7", topics: FleetTopics(prefix: "stepd/w7"),
                                               hasBarometer: false, hasGPS: false)
        let declared = discovery.messages.filter { !$0.payload.isEmpty }.map(\.topic)
        let removed = discovery.messages.filter { $0.payload.isEmpty }.map(\.topic)
        XCTAssertEqual(declared, ["steps", "steps_today", "distance", "cadence", "activity"].map { "homeassistant/sensor/stepd_w7/\($0)/config" })
        XCTAssertEqual(removed, ["homeassistant/sensor/stepd_w7/floors/config", "homeassistant/device_tracker/stepd_w7/position/config"])
    }

    func testDeviceIDIsSystemdsApplicationSpecificIDOfTheMachineID() throws {
        // Printed by systemd itself: `systemd-id128 machine-id --app-specific=6b1f3c0e9a4d4e57b2c8d05f7e31a9c4` on a
        // machine whose /etc/machine-id is 3d1219c7c4c5404aaa1f6d2a48adfda4.
        XCTAssertEqual(DeviceIdentity.applicationSpecificID(machineID: "3d1219c7c4c5404aaa1f6d2a48adfda4"),
                       "57fe1661d39345baaf86d95e22c24211")
        XCTAssertEqual(DeviceIdentity.applicationSpecificID(machineID: "3D1219C7C4C5404AAA1F6D2A48ADFDA4"),
                       "57fe1661d39345baaf86d95e22c24211")
        XCTAssertNil(DeviceIdentity.applicationSpecificID(machineID: "not-a-machine-id"))
        XCTAssertNil(DeviceIdentity.applicationSpecificID(machineID: "3d1219c7c4c5404aaa1f6d2a48adfdzz"))
        // And this machine's, against the tool when it is installed.
        let tool = "/usr/bin/systemd-id128"
        guard FileManager.default.isExecutableFile(atPath: tool),
              let machineID = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) else { return }
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["machine-id", "--app-specific=\(DeviceIdentity.applicationID)"]
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let printed = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(DeviceIdentity.applicationSpecificID(machineID: machineID.trimmingCharacters(in: .whitespacesAndNewlines)), printed)
    }

    func testDefaultIdentityHidesTheMachineIDAndNamesTheTopicAfterTheHost() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stepd-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("machine-id").path
        try "3d1219c7c4c5404aaa1f6d2a48adfda4\n".write(toFile: file, atomically: true, encoding: .utf8)
        let broker = BrokerURL(tls: false, host: "127.0.0.1", port: 1883)
        let c = FleetConfiguration(broker: broker, defaultIdentityWithTopicPrefix: nil, machineIDFiles: [file], hostName: "pinephone")
        XCTAssertEqual(c.deviceID, "57fe1661d39345baaf86d95e22c24211")
        XCTAssertEqual(c.topicPrefix, "stepd/pinephone-57fe1661")
        XCTAssertEqual(c.deviceName, "pinephone")
        XCTAssertEqual(c.entityName, "pinephone-57fe1661", "entity ids are as short as the topic")
        XCTAssertEqual(FleetConfiguration(broker: broker, defaultIdentityWithTopicPrefix: "lab/x", machineIDFiles: [file], hostName: "p").topicPrefix, "lab/x")
        let noMachineID = FleetConfiguration(broker: broker, defaultIdentityWithTopicPrefix: nil, machineIDFiles: [directory.appendingPathComponent("none").path], hostName: "pinephone")
        XCTAssertEqual(noMachineID.deviceID, "pinephone")
        XCTAssertEqual(noMachineID.topicPrefix, "stepd/pinephone")
        XCTAssertEqual(noMachineID.entityName, "pinephone")
        XCTAssertEqual(FleetConfiguration(broker: broker, deviceID: "wearable-07").entityName, "wearable-07")
        XCTAssertEqual(DeviceIdentity.hostName("mobian.local"), "mobian")
        XCTAssertEqual(DeviceIdentity.hostName("my host"), "my-host")
    }

    func testPasswordFileReadableByOthersIsRefused() throws {
        let path = NSTemporaryDirectory() + "stepd-password-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "s3cret\nignored\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o640)
        XCTAssertThrowsError(try PasswordFile.read(path: path)) {
            XCTAssertEqual($0 as? PasswordFile.Failure, .tooOpen(path: path, mode: "640"))
            XCTAssertTrue("\($0)".contains("chmod 600"), "\($0)")
        }
        chmod(path, 0o600)
        XCTAssertEqual(try PasswordFile.read(path: path), "s3cret")
        XCTAssertThrowsError(try PasswordFile.read(path: path + "-absent")) {
            XCTAssertTrue(($0 as? PasswordFile.Failure)?.isMissingInput == true)
        }
    }

    /// A file another user owns is refused even at mode 600: its owner could read it, or open it to others
    /// at any time. Checked against a uid given (so it runs as any user) and, as root, with a real chown.
    func testPasswordFileOwnedByAnotherUserIsRefused() throws {
        let path = NSTemporaryDirectory() + "stepd-password-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "s3cret\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        let me = geteuid()
        XCTAssertEqual(try PasswordFile.read(path: path, serviceUID: me), "s3cret")
        XCTAssertThrowsError(try PasswordFile.read(path: path, serviceUID: me + 1)) {
            XCTAssertEqual($0 as? PasswordFile.Failure, .notOwned(path: path, owner: me, service: me + 1))
            XCTAssertFalse(($0 as? PasswordFile.Failure)?.isMissingInput ?? true, "a configuration error (78), not missing input")
            XCTAssertTrue("\($0)".contains("chown "), "\($0)")
        }
        guard me == 0 else { return }
        let nobody: uid_t = 65_534
        XCTAssertEqual(chown(path, nobody, gid_t.max), 0, String(cString: strerror(errno)))
        XCTAssertThrowsError(try PasswordFile.read(path: path)) {
            XCTAssertEqual($0 as? PasswordFile.Failure, .notOwned(path: path, owner: nobody, service: 0))
            XCTAssertTrue("\($0)".contains("belongs to \(PasswordFile.user(nobody)) but stepd runs as root (uid 0); give it to the service: chown root \(path)"),
                          "\($0)")
        }
    }
}
