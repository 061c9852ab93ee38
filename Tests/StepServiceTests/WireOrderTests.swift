import Foundation
import StepProtocol
import XCTest

/// Every message kind is written as gpsd writes its JSON: `class` first in every object, then the fields in
/// the order the docs' examples show (docs/protocol.md, docs/gps.md), whatever order JSONEncoder would pick.
final class WireOrderTests: XCTestCase {
    /// The documented example lines, `{"class":...}` at the start of a line, per class.
    private func documentedExamples() throws -> [String: [String]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var examples: [String: [String]] = [:]
        for name in ["protocol.md", "gps.md"] {
            let text = try String(contentsOf: root.appendingPathComponent("docs/\(name)"), encoding: .utf8)
            for line in text.components(separatedBy: "\n") where line.hasPrefix("{\"class\":\"") {
                let cls = String(line.dropFirst(10).prefix { $0 != "\"" })
                examples[cls, default: []].append(line)
            }
        }
        return examples
    }

    /// The keys of a JSON object's top level, in the order written.
    static func topLevelKeys(_ text: String) -> [String] {
        var keys: [String] = [], depth = 0, inString = false, escaped = false, current = "", expectKey = false
        for ch in text {
            if inString {
                if escaped { escaped = false; current.append(ch) }
                else if ch == "\\" { escaped = true }
                else if ch == "\"" { inString = false; if expectKey && depth == 1 { keys.append(current) }; expectKey = false }
                else { current.append(ch) }
                continue
            }
            switch ch {
            case "\"": inString = true; current = ""
            case "{", "[": depth += 1; expectKey = ch == "{" && depth == 1
            case "}", "]": depth -= 1
            case ",": expectKey = depth == 1
            default: break
            }
        }
        return keys
    }

    private var messages: [(String, Data)] {
        let source = SourceStatus(kind: "replay", description: "replay:walk.csv.gz", state: "running", error: nil)
        var status = StatusMessage(release: "0.1.0", uptime_s: 12.5, source: source, detector: "peak", rate_in_hz: 100,
                                   rate_out_hz: 60, samples_in: 1250, samples_out: 750, clients: 1, dropped_watchers: 0,
                                   gravity: [0, 0, 9.81], gps: GPSStatus(state: "fix", error: nil, gpsd: "localhost:2947", fixes_accepted: 1,
                                                                        fixes_ignored: 0, connections: 1, last_fix_age_s: 0.4), id: .integer(1))
        status.closed_clients = 0
        status.time_zone = "Europe/Berlin"
        status.utc_offset_s = 3600
        let steps = StepsMessage(steps: 182, since: "s", cadence_spm: 108.4, distance_m: 128.1, detector: "peak", start: "a", end: "b",
                                 current_pace_s_per_m: 0.786, average_active_pace_s_per_m: 0.79, stride_m: 0.704,
                                 stride_calibrated: false, activity: "walking", floors_ascended: 1, floors_descended: 0, id: .integer(2))
        let visit = VisitMessage(arrival: "a", departure: "d", lat: 51.75, lon: -1.25, radius_m: 3.5, duration_s: 600, fixes: 601)
        let bin = HistoryBinMessage(start: "a", end: "b", date: "2026-11-21", steps: 8412, distance_m: 5920.4, floors: nil)
        return [
            ("VERSION", Wire.line(VersionMessage(release: "0.1.0"))),
            ("ERROR", Wire.line(ErrorMessage(RequestError.unknownCommand("fly"), id: .integer(3)))),
            ("STATUS", Wire.line(status)),
            ("STEPS", Wire.line(steps)),
            ("STEP", Wire.line(StepMessage(steps: 183, time: "t"))),
            ("ACTIVITY", Wire.line(ActivityMessage(state: "walking", time: "t"))),
            ("MOTION", Wire.line(MotionMessage(time: "t", pitch_deg: 35.2, roll_deg: -1.1, vertical_accel: -0.64, vibration_rms: 0.185))),
            ("WATCH", Wire.line(WatchMessage(enable: true, classes: ["STEP"], rate_hz: 20, id: .integer(4)))),
            ("HISTORY", Wire.line(HistoryMessage(from: "f", to: "t", bin: "day", time_zone: "Europe/Berlin", bins: [bin], id: .integer(7)))),
            ("POSITION", Wire.line(PositionMessage(time: "t", lat: 51.75, lon: -1.25, alt_msl_m: 60, alt_hae_m: 107, eph_m: 17.1,
                                                   epv_m: 29.9, speed_mps: 0, track_deg: 0, climb_mps: 0, mode: "3d",
                                                   satellites_used: 9, age_s: 0.41, accuracy: "medium", id: .integer(5)))),
            ("TRACK", Wire.line(TrackMessage(format: "gpx", distance_m: 397.6, points: 287, start: "a", end: "b", document: "<gpx/>"))),
            ("VISITS", Wire.line(VisitsMessage(visits: [visit], id: .integer(6)))),
        ]
    }

    func testEveryMessageStartsWithItsClassAndFollowsTheDocumentedOrder() throws {
        let documented = try documentedExamples()
        XCTAssertGreaterThanOrEqual(documented.count, 10, "the docs' examples were not found")
        for (cls, data) in messages {
            let line = String(decoding: data, as: UTF8.self)
            XCTAssertTrue(line.hasPrefix("{\"class\":\"\(cls)\","), "\(cls) does not start with its class: \(line)")
            // `class` first in every object, nested ones too (VISITS' VISIT).
            var rest = line[...]
            while let range = rest.range(of: "\"class\":") {
                XCTAssertEqual(line[line.index(before: range.lowerBound)], "{", "\(cls): a class not first in its object: \(line)")
                rest = line[range.upperBound...]
            }
            let keys = Self.topLevelKeys(line)
            let examples = try XCTUnwrap(documented[cls], "no example of \(cls) in the docs")
            for example in examples {
                let shown = Self.topLevelKeys(example)
                let common = keys.filter(shown.contains)
                XCTAssertEqual(common, shown.filter(keys.contains), "\(cls): fields out of the documented order\n  daemon: \(line)  docs:   \(example)")
            }
        }
    }

    func testNonFiniteNumbersAreWrittenAsNullAndStringsEscaped() {
        let line = String(decoding: Wire.line(MotionMessage(time: "a\"b\\c\n/d", pitch_deg: .nan, roll_deg: .infinity,
                                                              vertical_accel: 1, vibration_rms: 0.5)), as: UTF8.self)
        XCTAssertEqual(line, #"{"class":"MOTION","time":"a\"b\\c\n/d","pitch_deg":null,"roll_deg":null,"vertical_accel":1,"vibration_rms":0.5}"# + "\n")
    }
}
