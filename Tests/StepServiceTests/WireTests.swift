import Foundation
import StepProtocol
import XCTest

/// The protocol's encoding edges: request ids kept exactly, errors that keep the id, no non-finite number.
final class WireTests: XCTestCase {
    func testWholeNumberIDsRoundTripExactlyBeyondTwoToThe53() throws {
        for text in ["9007199254740993", "-9223372036854775808", "18446744073709551615", "0", "2.5", "\"a\"", "null", "[1,{\"b\":true}]"] {
            let request = try Request.parse(Data((#"{"cmd":"steps","id":"# + text + "}").utf8))
            let line = String(decoding: Wire.line(ErrorMessage(code: .badRequest, message: "m", id: request.id)), as: UTF8.self)
            XCTAssert(line.contains("\"id\":\(text)"), "\(text) → \(line)")
        }
    }

    func testAnUnknownCommandsFailureKeepsTheID() {
        XCTAssertThrowsError(try Request.parse(Data(#"{"cmd":"fly","id":42}"#.utf8))) { error in
            XCTAssertEqual((error as? RequestFailure)?.id, .integer(42))
            XCTAssertEqual((error as? RequestFailure)?.reason, .unknownCommand("fly"))
        }
        XCTAssertThrowsError(try Request.parse(Data("[1]".utf8))) { error in
            XCTAssertNil((error as? RequestFailure)?.id)
        }
    }

    /// Every way a request line fails has its code: a client decides on it, never on the sentence.
    func testEveryRequestFailureCarriesItsCode() throws {
        let lines: [(String, ErrorCode)] = [
            ("not json", .badRequest), ("[1]", .badRequest), (#"{"id":1}"#, .badRequest), (#"{"cmd":42}"#, .badRequest),
            (String(repeating: "[", count: 40), .badRequest), (#"{"cmd":"fly","id":2}"#, .unknownCommand),
        ]
        for (line, code) in lines {
            do {
                _ = try Request.parse(Data(line.utf8))
                XCTFail("\(line) parsed")
            } catch {
                let message = ErrorMessage(error, id: error.id)
                XCTAssertEqual(message.code, code.rawValue, line)
                XCTAssertEqual(message.message, error.description, line)
            }
        }
        XCTAssertEqual(RequestError.tooLong(limit: 4096).code, .tooLong)
        XCTAssertEqual(RequestError.notPermitted(command: "reset").code, .notPermitted)
        XCTAssertEqual(RequestError.badField(name: "bin", expected: "a bin").code, .badRequest)
        XCTAssertEqual(ErrorMessage(failure: CocoaError(.fileReadUnknown)).code, ErrorCode.internal.rawValue, "not a CodedError")
    }

    /// `code` comes second, after `class`; an ERROR from a daemon older than protocol 1.1 (no code) still
    /// decodes, with an empty code that no ErrorCode matches.
    func testTheCodeIsWrittenAfterTheClassAndMayBeAbsentWhenRead() throws {
        let line = String(decoding: Wire.line(ErrorMessage(RequestError.notPermitted(command: "reset"), id: .integer(1))), as: UTF8.self)
        XCTAssert(line.hasPrefix(#"{"class":"ERROR","code":"not_permitted","message":"\"reset\" is not permitted"#), line)
        let old = try JSONDecoder().decode(ErrorMessage.self, from: Data(#"{"class":"ERROR","message":"m","id":3}"#.utf8))
        XCTAssertEqual(old.code, "")
        XCTAssertNil(old.errorCode)
        XCTAssertEqual(old.id, .integer(3))
        let newer = try JSONDecoder().decode(ErrorMessage.self, from: Data(#"{"class":"ERROR","code":"brand_new","message":"m"}"#.utf8))
        XCTAssertEqual(newer.code, "brand_new")
        XCTAssertNil(newer.errorCode, "a code added after this client was built is read, not a decoding failure")
    }

    /// docs/protocol.md's table of codes lists exactly ErrorCode's cases.
    func testTheDocumentedCodesAreTheProtocols() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let section = try XCTUnwrap(text.components(separatedBy: "\n## Errors\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        let documented = section.components(separatedBy: "\n").compactMap { row -> String? in
            guard row.hasPrefix("| `"), let end = row.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(row[row.index(row.startIndex, offsetBy: 3)..<end])
        }
        XCTAssertEqual(documented, ErrorCode.allCases.map(\.rawValue))
    }

    func testNonFiniteNumbersAreSentAsNullNotAnEncodingFailure() throws {
        let message = MotionMessage(time: "t", pitch_deg: .nan, roll_deg: .infinity, vertical_accel: -.infinity, vibration_rms: 0.5)
        let line = Wire.line(message)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: line) as? [String: Any])
        XCTAssertEqual(object["class"] as? String, "MOTION")
        XCTAssert(object["pitch_deg"] is NSNull && object["roll_deg"] is NSNull && object["vertical_accel"] is NSNull, "\(object)")
        XCTAssertEqual(object["vibration_rms"] as? Double, 0.5)
    }

    /// What the daemon encodes, a client decodes into the same type and encodes again to the same fields and
    /// values (nulls included): the types of StepProtocol are the protocol for both sides.
    func testEveryMessageDecodesFromItsLineAndEncodesToTheSameBytes() throws {
        let visit = VisitMessage(arrival: "2026-11-22T08:00:00.000Z", departure: nil, lat: 52.5, lon: 13.4, radius_m: 20.5,
                                 duration_s: nil, fixes: 12)
        let source = SourceStatus(kind: "replay", description: "replay:walk.csv.gz", state: "running", error: nil)
        var status = StatusMessage(release: "0.1.0", uptime_s: 12.5, source: source, detector: "peak", rate_in_hz: 100,
                                   rate_out_hz: 60, samples_in: 1250, samples_out: 750, clients: 1, dropped_watchers: 0,
                                   gravity: [0, 0, 9.81], id: .integer(1))
        status.store = StoreStatusMessage(path: "/var/lib/stepd/stepd.sqlite", state: "ok", error: nil, retention_days: 365,
                                          last_commit: "2026-11-22T08:00:00.000Z")
        status.time_zone = "Europe/Berlin"
        let steps = StepsMessage(steps: 182, since: "2026-11-22T20:26:03.466Z", cadence_spm: 108.4, distance_m: 128.1,
                                 detector: "peak", start: "2026-11-22T20:26:03.466Z", end: "2026-11-22T20:27:43.120Z",
                                 current_pace_s_per_m: 0.786, average_active_pace_s_per_m: nil, stride_m: 0.704,
                                 stride_calibrated: false, activity: "walking", floors_ascended: 2, floors_descended: nil,
                                 id: .string("a"))
        let bins = [HistoryBinMessage(start: "2026-11-21T00:00:00.000+01:00", end: "2026-11-22T00:00:00.000+01:00",
                                      date: "2026-11-21", steps: 8412, distance_m: 5920.4, floors: nil)]
        try assertRoundTrip(status)
        try assertRoundTrip(steps)
        try assertRoundTrip(VersionMessage(release: "0.1.0"))
        try assertRoundTrip(ErrorMessage(RequestError.unknownCommand("fly"), id: .array([.integer(1)])))
        try assertRoundTrip(WatchMessage(enable: true, classes: ["MOTION"], rate_hz: 20, id: nil))
        try assertRoundTrip(HistoryMessage(from: "2026-11-16T00:00:00.000+01:00", to: "2026-11-22T21:40:12.514+01:00",
                                           bin: "day", time_zone: "Europe/Berlin", bins: bins, id: .integer(7)))
        try assertRoundTrip(PositionMessage(mode: "no_fix"))
        try assertRoundTrip(TrackMessage(format: "gpx", distance_m: 12.5, points: 3, start: nil, end: nil, document: "<gpx/>"))
        try assertRoundTrip(visit)
        try assertRoundTrip(VisitsMessage(visits: [visit]))
        try assertRoundTrip(StepMessage(steps: 183, time: "2026-11-22T20:41:07.250Z"))
        try assertRoundTrip(ActivityMessage(state: "walking", time: "2026-11-22T20:41:06.700Z"))
        try assertRoundTrip(MotionMessage(time: "t", pitch_deg: 35.2, roll_deg: -1.1, vertical_accel: -0.64, vibration_rms: 0.185))
    }

    func testEventsAreReadByTheirClassAndRepliesAreNotEvents() throws {
        var pedometer = StepsMessage(steps: 1, since: "s", cadence_spm: 0, distance_m: 0, detector: "peak", start: "s", end: "e",
                                     current_pace_s_per_m: nil, average_active_pace_s_per_m: nil, stride_m: 0.7,
                                     stride_calibrated: false, activity: "walking", floors_ascended: nil, floors_descended: nil)
        guard case .step(let step)? = try DaemonEvent(line: Wire.line(StepMessage(steps: 183, time: "t"))) else { return XCTFail() }
        XCTAssertEqual(step.steps, 183)
        XCTAssertNil(try DaemonEvent(line: Wire.line(pedometer)), "a STEPS reply is no event")
        pedometer.class = WatchClass.pedometer.rawValue
        guard case .pedometer(let decoded)? = try DaemonEvent(line: Wire.line(pedometer)) else { return XCTFail() }
        XCTAssertEqual(decoded, pedometer)
        XCTAssertThrowsError(try DaemonEvent(line: Data(#"{"class":"STEP","steps":"many"}"#.utf8)))
        XCTAssertNil(try DaemonEvent(line: Data("not json".utf8)))
    }

    func testARequestAsAClientEncodesItIsParsedAsTheSameRequest() throws {
        let sent = Request(command: .history, id: .integer(9007199254740993), fields: ["bin": .string("day"), "from": .null])
        let parsed = try Request.parse(Wire.line(sent).dropLast())
        XCTAssertEqual(parsed.command, .history)
        XCTAssertEqual(parsed.id, sent.id)
        XCTAssertEqual(parsed.fields["bin"], .string("day"))
        XCTAssertEqual(parsed.fields["from"], .null)
        XCTAssertNil(try Request.parse(Wire.line(Request(command: .steps)).dropLast()).id)
    }

    private func assertRoundTrip<Message: DaemonMessage>(_ message: Message, file: StaticString = #filePath, line: UInt = #line) throws {
        let encoded = Wire.line(message)
        XCTAssertEqual(MessageHead(line: encoded)?.class, Message.messageClass, file: file, line: line)
        let decoded = try JSONDecoder().decode(Message.self, from: encoded)
        // Compared as JSON values: the encoder's key order is not fixed from one encoding to the next.
        XCTAssertEqual(try JSONDecoder().decode(JSONValue.self, from: Wire.line(decoded)),
                       try JSONDecoder().decode(JSONValue.self, from: encoded), file: file, line: line)
    }
}
