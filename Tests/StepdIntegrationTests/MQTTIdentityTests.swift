import Foundation
import XCTest

/// Who the device is on the broker, through the real daemon and Mosquitto: never the machine id, the host name
/// in the topic and Home Assistant, and discovery that declares only the sensors that exist.
final class MQTTIdentityTests: XCTestCase {
    private func status(_ daemon: Daemon) throws -> [String: Any] { try daemon.connect().request(["cmd": "status"]) }

    private func waitForLink(_ daemon: Daemon) throws {
        try daemon.waitUntil(timeout: 20, "mqtt connected") { ($0["mqtt"] as? [String: Any])?["state"] as? String == "connected" }
    }

    func testDefaultIdentityHidesTheMachineIDAndDiscoveryDeclaresOnlyWhatExists() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        // A recording with a pressure file beside it: a barometer; GPS on (gpsd need not answer).
        let recording = directory.file("walk-inhand.csv.gz")
        try FileManager.default.copyItem(atPath: Binaries.bundledRecording, toPath: recording)
        try ("t,p_kpa\n" + (0...400).map { String(format: "%.2f,100.8731", Double($0) / 4) }.joined(separator: "\n") + "\n")
            .write(toFile: directory.file("walk-inhand.pressure.csv"), atomically: true, encoding: .utf8)
        let mqtt = ["--mqtt-url", "mqtt://127.0.0.1:\(broker.port)", "--mqtt-homeassistant", "--state-dir", directory.file("state")]
        var daemon = try Daemon(arguments: ["--replay", recording, "--loop", "--gpsd", "127.0.0.1:\(GPSDFake.freePort())"] + mqtt,
                                directory: directory, socketName: "a.sock")
        try waitForLink(daemon)
        let link = try XCTUnwrap(try status(daemon)["mqtt"] as? [String: Any])
        let id = try XCTUnwrap(link["device_id"] as? String)
        let prefix = try XCTUnwrap(link["topic_prefix"] as? String)
        let host = try XCTUnwrap(ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init))
        if let machineID = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           machineID.count == 32 {
            XCTAssertNotEqual(id, machineID, "the machine id is published")
            XCTAssertEqual(id.count, 32)
            XCTAssertEqual(prefix, "stepd/\(host)-\(id.prefix(8))")
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-id128") {
                let printed = try runCommand("/usr/bin/systemd-id128", ["machine-id", "--app-specific=6b1f3c0e9a4d4e57b2c8d05f7e31a9c4"], timeout: 10)
                XCTAssertEqual(id, printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        let node = "stepd_\(id)"
        let everything = ["steps", "steps_today", "distance", "cadence", "activity", "floors"].map { "homeassistant/sensor/\(node)/\($0)/config" }
            + ["homeassistant/device_tracker/\(node)/position/config"]
        var retained: [String: String] = [:]
        try pollUntil("all seven discovery configs", timeout: 10) {
            retained = try retainedMessages(broker: broker, topics: ["homeassistant/#", "\(prefix)/#"])
            return Set(retained.keys).isSuperset(of: everything)
        }
        XCTAssertEqual(retained["\(prefix)/status"], "online")
        for (topic, payload) in retained where topic.hasPrefix("homeassistant/") {
            XCTAssertFalse(payload.contains(try String(contentsOfFile: "/etc/machine-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            let config = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
            XCTAssertEqual((config["device"] as? [String: Any])?["name"] as? String, host, topic)
            XCTAssertEqual((config["device"] as? [String: Any])?["identifiers"] as? [String], [node], topic)
        }
        _ = daemon.terminate()

        // Again without a barometer and with --no-gps: the floors sensor and the tracker are removed.
        daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"] + mqtt,
                            directory: directory, socketName: "b.sock")
        try waitForLink(daemon)
        let declared = Set(everything.dropLast().filter { !$0.hasSuffix("/floors/config") })
        try pollUntil("floors and the tracker removed", timeout: 10, detail: "retained: \(retained.keys.sorted())") {
            retained = try retainedMessages(broker: broker, topics: ["homeassistant/#"])
            return Set(retained.keys) == declared
        }
        _ = daemon.terminate()
    }
}
