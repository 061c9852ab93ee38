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
