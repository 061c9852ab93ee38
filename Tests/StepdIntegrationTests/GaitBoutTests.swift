import Foundation
import XCTest

/// A walking bout's gait measures are the same live and offline: the daemon replaying a recording sends one
/// BOUT per row of `stepd analyze`'s bouts.csv, with the same figures.
final class GaitBoutTests: XCTestCase {
    /// Two lower-back trials after two minutes of standing still (the first trial's first reading, held), so
    /// that the first bout ends well after the watcher has connected however slowly the daemon starts.
    private func makeRecording(in dir: TemporaryDirectory) throws -> String {
        var text = "t,x,y,z\n"
        var offset = 0.0
        var first = true
        for name in ["s05_t4", "s01_t1"] {
            let trace = try Binaries.sharedData("steps/lowerback-turns/\(name)/accel.csv.gz")
            let plain = try runCommand("/bin/gzip", ["-dc", trace.path])
            XCTAssertEqual(plain.status, 0, plain.stderr)
            let rows = plain.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: ",").map { Double($0)! } }
            if first {
                for i in 0..<12_000 { text += String(format: "%.2f,%.4f,%.4f,%.4f\n", Double(i) / 100, rows[0][1], rows[0][2], rows[0][3]) }
                offset = 120
                first = false
            }
            for row in rows { text += String(format: "%.4f,%.4f,%.4f,%.4f\n", row[0] + offset, row[1], row[2], row[3]) }
            offset += (rows.last?[0] ?? 0) + 40
        }
        let path = dir.file("two-trials.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func parseTime(_ text: String) -> Date? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format.date(from: text)
    }

    func testReplayBoutEventsEqualAnalyzeBoutsCSV() throws {
        let dir = try TemporaryDirectory()
        let recording = try makeRecording(in: dir)
        let analyzed = try runCommand(Binaries.stepd, ["analyze", "--placement", "waist", "--format", "bouts", recording])
        XCTAssertEqual(analyzed.status, 0, analyzed.stderr)
        let lines = analyzed.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "start,end,steps,cadence_spm,stride_time_s,stride_time_cv,regularity,symmetry,step_length_m,speed_mps")
        let rows = lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(rows.count, 2, analyzed.stdout)

        let daemon = try Daemon(arguments: ["--replay", recording, "--speed", "10", "--placement", "waist", "--no-gps", "--no-barometer"])
        let client = try SocketClient(path: daemon.socketPath, receiveTimeout: 120)
        let ack = try client.request(["cmd": "watch", "enable": true, "classes": ["BOUT"]])
        XCTAssertEqual(ack["classes"] as? [String], ["BOUT"])
        var events: [[String: Any]] = []
        while events.count < rows.count {
            let event = try client.readObject()
            XCTAssertEqual(event["class"] as? String, "BOUT", "\(event)")
            events.append(event)
        }
        // The history keeps them: the same bouts, by their start.
        let history = try client.request(["cmd": "history", "from": ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600)),
                                          "bouts": true])
        let saved = try XCTUnwrap(history["bouts"] as? [[String: Any]], "\(history)")
        XCTAssertEqual(saved.map { $0["start"] as? String }.count, events.count)
        for (stored, event) in zip(saved, events) {
            for key in ["steps", "cadence_spm", "stride_time_s", "stride_time_cv", "regularity", "symmetry", "step_length_m", "speed_mps"] {
                XCTAssertEqual("\(stored[key] ?? "none")", "\(event[key] ?? "none")", key)
            }
            let storedStart = try XCTUnwrap((stored["start"] as? String).flatMap(parseTime))
            let eventStart = try XCTUnwrap((event["start"] as? String).flatMap(parseTime))
            XCTAssertEqual(storedStart.timeIntervalSince1970, eventStart.timeIntervalSince1970, accuracy: 0.002)
        }
        let bad = try client.request(["cmd": "history", "bouts": "yes"])
        XCTAssertEqual(bad["class"] as? String, "ERROR", "\(bad)")
        XCTAssertEqual(daemon.terminate(), 0)

        for (row, event) in zip(rows, events) {
            XCTAssertEqual(event["steps"] as? Int, Int(row[2]), "\(event) vs \(row)")
            let duration = try XCTUnwrap(Double(row[1])) - XCTUnwrap(Double(row[0]))
            XCTAssertEqual(try XCTUnwrap(event["duration_s"] as? Double), duration, accuracy: 0.0015)
            XCTAssertEqual(event["cadence_spm"] as? Double, Double(row[3]))
            for (column, key) in [(4, "stride_time_s"), (5, "stride_time_cv"), (6, "regularity"), (7, "symmetry"),
                                  (8, "step_length_m"), (9, "speed_mps")] {
                XCTAssertFalse(row[column].isEmpty, "\(key) is given at the waist: \(row)")
                XCTAssertEqual(event[key] as? Double, Double(row[column]), "\(key): \(event) vs \(row)")
            }
            XCTAssertEqual(event["placement"] as? String, "waist")
            // Lower-back walking: a stride of about a second, a speed of about 1 m/s.
            XCTAssert((0.8...1.5).contains(try XCTUnwrap(event["stride_time_s"] as? Double)), "\(event)")
            XCTAssert((0.6...1.8).contains(try XCTUnwrap(event["speed_mps"] as? Double)), "\(event)")
        }
    }

    /// Away from the waist the bout has its stride time, variability, regularity and symmetry, and no step length
    /// or speed: empty in bouts.csv, absent from BOUT.
    func testAnalyzeLeavesLengthAndSpeedEmptyAwayFromTheWaist() throws {
        let trace = try Binaries.sharedData("steps/lowerback-turns/s05_t4/accel.csv.gz")
        for placement in ["auto", "pocket", "wrist"] {
            let result = try runCommand(Binaries.stepd, ["analyze", "--placement", placement, "--format", "bouts", trace.path])
            XCTAssertEqual(result.status, 0, result.stderr)
            let row = try XCTUnwrap(result.stdout.split(separator: "\n").dropFirst().first)
                .split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            XCTAssertEqual(row.count, 10, "\(row)")
            XCTAssertNotNil(Double(row[4]), "stride time given: \(row)")
            XCTAssertNotNil(Double(row[6]), "regularity given: \(row)")
            XCTAssertEqual(row[8], "", placement)
            XCTAssertEqual(row[9], "", placement)
        }
        let bad = try runCommand(Binaries.stepd, ["analyze", "--placement", "belt", trace.path])
        XCTAssertEqual(bad.status, 64)
        XCTAssert(bad.stderr.contains("--placement: expected one of auto, wrist, pocket, hand, bag, waist"), bad.stderr)
    }
}

/// The fleet publishes each bout once, QoS 1 through the outbox, with the BOUT event's figures.
final class GaitBoutMQTTTests: XCTestCase {
    func testEachBoutIsPublishedWithItsGaitMeasures() throws {
        let directory = try TemporaryDirectory()
        let broker = try MosquittoBroker(directory: directory)
        let subscriber = try MosquittoSubscriber(broker: broker, topics: ["stepd/gait/bout"], arguments: ["-q", "1"])
        try pollUntil("the broker's subscriber", timeout: 20, every: 0.02, detail: String(broker.log.suffix(2000))) {
            broker.log.contains("Received SUBSCRIBE")
        }
        let trace = try Binaries.sharedData("steps/lowerback-turns/s05_t4/accel.csv.gz")
        let daemon = try Daemon(arguments: ["--replay", trace.path, "--speed", "20", "--placement", "waist", "--no-gps",
                                            "--no-barometer", "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                                            "--mqtt-device-id", "gait"], directory: directory)
        try subscriber.waitFor("a bout on stepd/gait/bout", timeout: 60) { $0.contains { $0.topic == "stepd/gait/bout" } }
        let message = try XCTUnwrap(subscriber.messages.first { $0.topic == "stepd/gait/bout" })
        let payload = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(message.payload.utf8)) as? [String: Any])
        XCTAssertEqual(payload["device"] as? String, "gait")
        XCTAssert((payload["key"] as? String)?.hasPrefix("gait/") == true, "\(payload)")
        XCTAssertNil(payload["class"], "a record, not an event")

        let analyzed = try runCommand(Binaries.stepd, ["analyze", "--placement", "waist", "--format", "bouts", trace.path])
        let row = try XCTUnwrap(analyzed.stdout.split(separator: "\n").dropFirst().first)
            .split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(payload["steps"] as? Int, Int(row[2]))
        XCTAssertEqual(payload["cadence_spm"] as? Double, Double(row[3]))
        for (column, key) in [(4, "stride_time_s"), (5, "stride_time_cv"), (6, "regularity"), (7, "symmetry"),
                              (8, "step_length_m"), (9, "speed_mps")] {
            XCTAssertEqual(payload[key] as? Double, Double(row[column]), "\(key): \(payload) vs \(row)")
        }
        XCTAssertEqual(payload["placement"] as? String, "waist")
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssertEqual(subscriber.messages.filter { $0.topic == "stepd/gait/bout" }.count, 1, "sent once")
    }
}
