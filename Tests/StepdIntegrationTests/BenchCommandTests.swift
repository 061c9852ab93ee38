import Foundation
import XCTest

/// `stepd bench` on a folder of traces, as a user runs it.
final class BenchCommandTests: XCTestCase {
    /// A trace folder made of the bundled recording and its ground truth.
    private func traceFolder(steps: String? = nil) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("stepd-bench-\(UUID().uuidString)")
        let trace = root.appendingPathComponent("walk-inhand")
        try FileManager.default.createDirectory(at: trace, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createSymbolicLink(atPath: trace.appendingPathComponent("accel.csv.gz").path,
                                                   withDestinationPath: Binaries.bundledRecording)
        let stepsFile = trace.appendingPathComponent("steps.csv")
        if let steps {
            try steps.write(to: stepsFile, atomically: true, encoding: .utf8)
        } else {
            let truth = (Binaries.bundledRecording as NSString).deletingLastPathComponent + "/walk-inhand.steps.csv"
            try FileManager.default.createSymbolicLink(atPath: stepsFile.path, withDestinationPath: truth)
        }
        return root
    }

    func testBenchCountsWhatAnalyzeCountsAndScoresIt() throws {
        let root = try traceFolder()
        let analyze = try runCommand(Binaries.stepd, ["analyze", "--json", Binaries.bundledRecording])
        let offline = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(analyze.stdout.utf8)) as? [String: Any])?["steps"] as? Int)
        let bench = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        // "walk-inhand   182  |   <peak det> <APE> <F1>  |   <threshold det> <APE> <F1>"
        let row = try XCTUnwrap(bench.stdout.split(separator: "\n").first { $0.hasPrefix("walk-inhand ") }, bench.stdout)
        let fields = row.split(separator: " ").filter { $0 != "|" }
        XCTAssertEqual(fields.count, 8, String(row))
        XCTAssertEqual(Int(fields[1]), 182, "true steps: the rows of steps.csv")
        XCTAssertEqual(Int(fields[2]), offline, "the default detector counts in bench what it counts in analyze")
        let f1 = try XCTUnwrap(Double(fields[4]))
        XCTAssertGreaterThan(f1, 0.95)
        XCTAssertTrue(bench.stdout.contains("-- \(root.lastPathComponent) total:"), bench.stdout)
        XCTAssertTrue(bench.stdout.contains("report delay (peak)"), bench.stdout)
    }

    func testJitteredClockIsDrawnTheSameForASeedAndStaysNearTheRecordingsCount() throws {
        let root = try traceFolder()
        func count(_ output: String) throws -> Int {
            let row = try XCTUnwrap(output.split(separator: "\n").first { $0.hasPrefix("walk-inhand ") }, output)
            return try XCTUnwrap(Int(row.split(separator: " ").filter { $0 != "|" }[2]), String(row))
        }
        let plain = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", root.path])
        let first = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", "--jitter-ms", "3", "--seed", "5", root.path])
        let again = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", "--jitter-ms", "3", "--seed", "5", root.path])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.hasPrefix("clock jitter: every timestamp moved by up to ±3.0 ms (seed 5)\n"), first.stdout)
        XCTAssertFalse(plain.stdout.contains("clock jitter"), plain.stdout)
        XCTAssertEqual(first.stdout, again.stdout, "the same draws for the same seed")
        XCTAssertEqual(Double(try count(first.stdout)), Double(try count(plain.stdout)), accuracy: 3, "a few milliseconds move a steady walk's count by a step or two at most")

        let negative = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", "--jitter-ms=-1", root.path])
        XCTAssertNotEqual(negative.status, 0)
        XCTAssertTrue(negative.stderr.contains("--jitter-ms must be 0 or more"), negative.stderr)
    }

    func testBenchGroupsByPlacementAndScoresTheWalkingBout() throws {
        let root = try traceFolder()
        let meta = #"{"placement": "backpocket", "ground_truth": "video", "walking_bout_s": [10.0, 60.0]}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let bench = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("-- \(root.lastPathComponent) inside walking bouts:"), bench.stdout)
        XCTAssertTrue(bench.stdout.contains("-- pocket back (1 traces):"), bench.stdout)
    }

    func testStepFreeRecordingsAreReportedAsFalseStepsPerHourApartFromTheWalks() throws {
        // The bundled walk declared step-free (as tools/step-free-traces declares hand activities): every step
        // it counts is a false one, reported per hour of recording and kept out of the placement totals.
        let root = try traceFolder(steps: "t\n")
        let meta = #"{"placement": "wrist", "step_free": true, "activity": "brush teeth"}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("== \(root.lastPathComponent) (1 step-free recordings"), bench.stdout)
        let row = try XCTUnwrap(bench.stdout.split(separator: "\n").first { $0.hasPrefix("brush teeth ") }, bench.stdout)
        let fields = row.split(separator: " ").filter { $0 != "|" }
        let minutes = try XCTUnwrap(Double(fields[2])), steps = try XCTUnwrap(Double(fields[3])), perHour = try XCTUnwrap(Double(fields[4]))
        XCTAssertGreaterThan(steps, 100, "the walk's steps, all false here")
        XCTAssertEqual(perHour, steps / minutes * 60, accuracy: perHour * 0.05, "steps per hour of recording (minutes to 0.1)")
        XCTAssertTrue(bench.stdout.contains("false steps = "), bench.stdout)
        XCTAssertFalse(bench.stdout.contains("== by placement"), "a step-free recording is not a walk of its placement")
    }

    func testActivitySegmentsAreScoredOneActivityAtATime() throws {
        // meta.json segments as simul-hand gives them: each activity's steps are scored inside its segments.
        let root = try traceFolder()
        let meta = #"{"placement": "hand-held", "walking_s": [[0.0, 30.0], [50.0, 200.0]], "stairs_up_s": [[30.0, 50.0]]}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("-- \(root.lastPathComponent) by activity"), bench.stdout)
        let lines = bench.stdout.split(separator: "\n").map(String.init)
        let stairs = try XCTUnwrap(lines.first { $0.hasPrefix("   stairs up ") }, bench.stdout)
        let walking = try XCTUnwrap(lines.first { $0.hasPrefix("   walking ") }, bench.stdout)
        func trueCount(_ line: String) -> Int? { line.components(separatedBy: "true ").last?.split(separator: " ").first.flatMap { Int($0) } }
        XCTAssertEqual((trueCount(stairs) ?? 0) + (trueCount(walking) ?? 0), 182, "every true step lies in one segment")
        XCTAssertTrue(bench.stdout.contains("-- hand (1 traces):"), "hand-held is the hand placement: \(bench.stdout)")
    }

    func testEverySetIsSummedPerPlacementAndPersonWithTheWalkingRecall() throws {
        let root = try traceFolder()
        let meta = #"{"placement": "inhand", "subject": "Jamie (Pixel)", "ground_truth": "video"}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let json = root.appendingPathComponent("scores.jsonl")
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", "--json", json.path, root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        let lines = bench.stdout.split(separator: "\n").map(String.init)
        let set = root.lastPathComponent
        // "<set> hand 1 182 <detected> <mean err> <worst err> <mean F1> <min F1> <recall> <lowest> <gate> <lowest> step walk-inhand; ..."
        let placement = try XCTUnwrap(lines.drop { !$0.hasPrefix("== by set and placement (peak)") }.first { $0.hasPrefix(set) }, bench.stdout)
        let fields = placement.split(separator: " ")
        XCTAssertEqual(fields[1], "hand")
        XCTAssertEqual(Int(fields[3]), 182)
        XCTAssertEqual(fields[13], "step", "the truth gives instants: recall per step")
        let recall = try XCTUnwrap(Double(fields[9]))
        XCTAssertGreaterThan(recall, 90)
        XCTAssertLessThanOrEqual(recall, 100)
        let gate = try XCTUnwrap(Double(fields[11]), "the gate's own share, beside the detector without it")
        XCTAssertGreaterThanOrEqual(gate, recall - 0.01, "the gate is charged only with what the detector without it found")
        XCTAssertLessThanOrEqual(gate, 100)
        let person = try XCTUnwrap(lines.drop { !$0.hasPrefix("== by set and person (peak)") }.first { $0.hasPrefix(set) }, bench.stdout)
        XCTAssertEqual(person.split(separator: " ")[1], "Jamie", "the subject's first word")
        // The same figures, one JSON object per trace and detector.
        let records = try String(contentsOf: json, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(records.count, 1)
        let record = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(records[0].utf8)) as? [String: Any])
        XCTAssertEqual(record["person"] as? String, "Jamie")
        XCTAssertEqual(record["truth"] as? String, "instants")
        XCTAssertEqual(record["true_steps"] as? Int, 182)
        XCTAssertEqual(record["walking_recall_unit"] as? String, "steps")
        XCTAssertEqual(try XCTUnwrap(record["walking_recall_pct"] as? Double), recall, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(record["gate_recall_pct"] as? Double), gate, accuracy: 0.01)
        XCTAssertEqual(record["detected_steps"] as? Int, Int(fields[4]))
    }

    func testATraceWhoseTruthIsACountIsScoredAgainstIt() throws {
        // The Cambridge layout: no steps.csv, a step count and the walk's bounds in meta.json.
        let root = try traceFolder()
        try FileManager.default.removeItem(at: root.appendingPathComponent("walk-inhand/steps.csv"))
        let meta = #"{"placement": "back pocket", "subject": "p3", "step_count": 200, "walking_bout_s": [0.0, 100.0]}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let analyze = try runCommand(Binaries.stepd, ["analyze", "--json", Binaries.bundledRecording])
        let offline = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(analyze.stdout.utf8)) as? [String: Any])?["steps"] as? Int)
        let json = root.appendingPathComponent("scores.jsonl")
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", "--json", json.path, root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("== \(root.lastPathComponent) (1 walks, truth a step count"), bench.stdout)
        let row = try XCTUnwrap(bench.stdout.split(separator: "\n").first { $0.hasPrefix("walk-inhand ") }, bench.stdout)
        let fields = row.split(separator: " ").filter { $0 != "|" }
        XCTAssertEqual(fields[1...3], ["pocket", "back", "200"])
        XCTAssertEqual(Int(fields[4]), offline, "the whole recording's count")
        XCTAssertEqual(try XCTUnwrap(Double(fields[5])), Double(abs(offline - 200)) / 2, accuracy: 0.05, "error against 200, percent")
        let record = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(String(contentsOf: json, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines).utf8)) as? [String: Any])
        XCTAssertEqual(record["truth"] as? String, "count")
        XCTAssertEqual(record["walking_recall_unit"] as? String, "seconds")
        XCTAssertNil(record["f1"], "a count has no instants to pair")
        XCTAssertTrue(bench.stdout.contains("second  walk-inhand; walk-inhand"), bench.stdout)
    }

    func testRunsLabelledByActivityNameTheWalksWithoutStepsAndTheStepsWhileSeated() throws {
        // The sp-sw-har layout: no steps.csv, activity segments. The bundled walk declared seated after 20 s.
        let root = try traceFolder()
        try FileManager.default.removeItem(at: root.appendingPathComponent("walk-inhand/steps.csv"))
        let meta = #"{"placement": "front pocket", "subject": "s04", "walking_s": [[0.0, 20.0]], "seated_s": [[20.0, 1000.0]]}"#
        try meta.write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("-- peak: 1 runs with a walk without steps or steps while seated:"), bench.stdout)
        let row = try XCTUnwrap(bench.stdout.split(separator: "\n").first { $0.hasPrefix("   walk-inhand ") }, bench.stdout)
        let seated = try XCTUnwrap(row.components(separatedBy: "seated ").last?.split(separator: ",").first.flatMap { Int($0) }, String(row))
        XCTAssertGreaterThan(seated, 100, "the walk's steps after 20 s, all while 'seated'")
        XCTAssertTrue(bench.stdout.contains("no step truth: 0 walks without steps, \(seated) steps while seated"), bench.stdout)
    }

    func testAFolderThatDoesNotExistIsNamedAndSkipped() throws {
        let root = try traceFolder()
        let absent = root.appendingPathComponent("no-such-set").path
        let bench = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", absent, root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("skipped (no such folder): \(absent)"), bench.stdout)
        XCTAssertTrue(bench.stdout.contains("walk-inhand "), bench.stdout)
        // A machine without any of the data sets: told so, not failed.
        let none = try runCommand(Binaries.stepd, ["bench", absent])
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertTrue(none.stdout.contains("nothing to score: none of the folders exists"), none.stdout)
    }

    func testAMalformedMetaFileIsNamed() throws {
        let root = try traceFolder()
        try "{placement".write(to: root.appendingPathComponent("walk-inhand/meta.json"), atomically: true, encoding: .utf8)
        let bench = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", root.path])
        XCTAssertNotEqual(bench.status, 0)
        XCTAssertTrue(bench.stderr.contains("meta.json: not a JSON object"), bench.stderr)
    }

    func testBenchTimesThePipeline() throws {
        let root = try traceFolder()
        let bench = try runCommand(Binaries.stepd, ["bench", "--detector", "peak", "--throughput-seconds", "0.2",
                                                    "--reference-samples-per-second", "1000000", root.path])
        XCTAssertEqual(bench.status, 0, bench.stderr)
        XCTAssertTrue(bench.stdout.contains("million samples/s"), bench.stdout)
        XCTAssertTrue(bench.stdout.contains("numpy/scipy reference: 1.000 million samples/s"), bench.stdout)
    }

    func testAFolderWithoutTracesIsAClearError() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("stepd-bench-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let bench = try runCommand(Binaries.stepd, ["bench", empty.path])
        XCTAssertNotEqual(bench.status, 0)
        XCTAssertTrue(bench.stderr.contains("no traces"), bench.stderr)
    }

    func testAMalformedStepsFileNamesItsLine() throws {
        let root = try traceFolder(steps: "t\n1.5\nsoon\n")
        let bench = try runCommand(Binaries.stepd, ["bench", "--throughput-seconds", "0", root.path])
        XCTAssertNotEqual(bench.status, 0)
        XCTAssertTrue(bench.stderr.contains("steps.csv:3: expected a step time, found 'soon'"), bench.stderr)
    }
}
