import ArgumentParser
import Foundation
import StepAcquisition
import StepProcessing

/// Scores detectors on recordings with ground truth, and times the pipeline.
package struct Bench: ParsableCommand {
    package static let configuration = CommandConfiguration(
        abstract: "Score step detectors on folders of traces per set, placement and person, and time the pipeline.",
        discussion: """
            Each DIR is a trace folder or a folder of trace folders (the layout of ../shared/data/README.md). \
            Prints per trace, per folder and per placement (from each trace's meta.json): true and detected \
            counts, absolute percentage error and step F1 (detected instants paired one-to-one with true ones \
            within the tolerance, after subtracting the detector's median lag). Foot-switch ground truth is \
            scored after repair (GroundTruthRepair), with the recorded-truth figure beside it; traces whose \
            meta.json gives a walking bout are also scored inside it, and traces with activity segments (stairs up, \
            stairs down, walking, standing) one activity at a time. Step-free recordings (meta.json "step_free": \
            true, such as the hand activities that tools/step-free-traces converts) are reported apart, as false \
            steps per hour of recording. Then the report delay and the throughput of the first detector's pipeline \
            on one core, each recording streamed from its file (never held whole), with the split of the time \
            between gunzip, parsing and the pipeline.

            Traces without steps.csv are scored by what their meta.json gives: a step count and the walk's start and \
            end ("step_count", "walking_bout_s": the Cambridge walks of tools/convert-cambridge) give the count \
            error over the recording and inside the walk; activity segments alone ("walking_s", "seated_s", ...: \
            tools/convert-sp-sw-har) give the steps of each activity and the runs whose walking got no step. \
            Every set is also summed per placement and per person ("subject"), with the walking recall: per step, \
            the true steps inside walking bouts (meta.json's, or runs of 10 or more true steps less than 2 s \
            apart) that a detected step pairs with; for a count truth, per second, the share of the walk covered \
            by runs of counted steps (and min(detected, true) / true inside the walk); and the gate's own share of \
            it: of what the peak detector finds with its walking gate removed, run beside it, the share the gated \
            one keeps. A folder that does not exist is skipped and named. --json FILE writes every \
            trace's scores as one JSON object a line (docs/step-detection.md). --jitter-ms MS moves every \
            timestamp by up to ±MS (a phone's uneven clock; --seed picks the draw), to show how far the scores \
            move when nothing about the walks has changed.
            """)

    @Option(name: .customLong("detector"), help: "Detectors to score (repeatable); the first is timed. Default: the default detector and threshold.")
    var detectors: [String] = []

    @Option(help: "Matching tolerance, seconds.")
    var toleranceSeconds = 0.25

    @Option(help: "How long to time the pipeline, seconds (0 skips timing).")
    var throughputSeconds = 3.0

    @Option(help: "Samples per second of the numpy/scipy reference (tools/reference_pipeline.py), to print the ratio.")
    var referenceSamplesPerSecond: Double?

    @Option(help: "Ground truth to score against: auto (repaired where meta.json says foot switches), recorded, repaired.")
    var truth: TruthChoice = .auto

    @Option(help: "Also write each trace's scores, one JSON object per trace and detector a line, to this file.")
    var json: String?

    @Option(help: "Move every timestamp by a random amount up to ± this many milliseconds (never out of order) before detecting: how far the scores move when only the clock's unevenness changes. 0: the recording as it is.")
    var jitterMs = 0.0

    @Option(help: "The unit of the traces' x, y, z: mps2, g, or auto (the header's, else g when the gravity in the first 1000 samples is about 1, with a notice).")
    var units: RecordingUnits = .auto

    @Option(help: "Seed of --jitter-ms's draws (each trace's also depends on its name).")
    var seed: UInt64 = 1

    @Argument(help: "Folders of traces.")
    var folders: [String]

    enum TruthChoice: String, ExpressibleByArgument, CaseIterable {
        case auto, recorded, repaired
    }

    struct Trace {
        var folder: String
        var name: String
        /// The recording, read in one streaming pass whenever it is needed.
        var accelPath: String
        /// Step instants; empty where the truth is a count or activity labels.
        var truth: [Double]
        var meta = TraceMeta()
        var kind = TraceScore.Truth.instants
    }

    package init() {}

    package func run() throws {
        let kinds = try (detectors.isEmpty ? [StepDetectorKind.default.rawValue, StepDetectorKind.threshold.rawValue] : detectors)
            .map { name -> StepDetectorKind in
                guard let kind = StepDetectorKind(rawValue: name) else {
                    throw ValidationError("unknown detector '\(name)'; known: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return kind
            }
        var traces: [Trace] = [], skipped: [String] = []
        for folder in folders {
            guard FileManager.default.fileExists(atPath: folder) else {
                skipped.append(folder)
                continue
            }
            traces += try Self.loadTraces(in: folder)
        }
        if !skipped.isEmpty { print("skipped (no such folder): \(skipped.joined(separator: ", "))") }
        guard !traces.isEmpty else {
            // A machine without the data sets (a clean CI clone) is told what was skipped, not failed.
            if skipped.count == folders.count { print("nothing to score: none of the folders exists"); return }
            throw ValidationError("no traces (accel.csv[.gz] + steps.csv, or meta.json with a step count or activity segments) under \(folders.joined(separator: ", "))")
        }

        if jitterMs < 0 || !jitterMs.isFinite { throw ValidationError("--jitter-ms must be 0 or more, not \(jitterMs)") }
        if jitterMs > 0 { print("clock jitter: every timestamp moved by up to ±\(jitterMs) ms (seed \(seed))") }
        var table = BenchTable(kinds: kinds)
        var scores: [TraceScore] = []
        var latency = LatencyProbe(kind: kinds[0])
        for trace in traces {
            let jitter = ClockJitter(milliseconds: jitterMs, seed: seed, trace: "\(trace.folder)/\(trace.name)")
            let (detected, recordedSeconds, ungated) = try Self.detect(trace, kinds: kinds, units: units, jitter: jitter, latency: &latency)
            let repair = trace.kind == .instants && (truth == .repaired || (truth == .auto && trace.meta.footSwitchTruth))
            let scoredTruth = repair ? GroundTruthRepair.repaired(trace.truth) : trace.truth
            scores += zip(kinds, detected).map { kind, steps in
                Self.score(trace, detector: kind, steps: steps, ungatedSteps: kind == .peak ? ungated : nil, scoredTruth: scoredTruth,
                           recordedSeconds: recordedSeconds, toleranceSeconds: toleranceSeconds)
            }
            guard trace.kind == .instants || trace.kind == .stepFree else { continue }
            var row = BenchTable.Row(folder: trace.folder, trace: trace.name, placement: trace.meta.placement, repaired: repair)
            row.stepFree = trace.meta.stepFree
            row.activity = trace.meta.activity
            row.recordedSeconds = recordedSeconds
            row.byActivity = trace.meta.segments.map { segment in
                (segment.activity, detected.map { steps in
                    StepMatching.accuracy(trueTimes: scoredTruth, detectedTimes: steps, within: segment.windows,
                                          toleranceSeconds: toleranceSeconds)
                })
            }
            for steps in detected {
                row.scores.append(StepMatching.accuracy(trueTimes: scoredTruth, detectedTimes: steps, toleranceSeconds: toleranceSeconds))
                row.recorded.append(StepMatching.accuracy(trueTimes: trace.truth, detectedTimes: steps, toleranceSeconds: toleranceSeconds))
                if let bout = trace.meta.walkingBout {
                    row.inBout.append(StepMatching.accuracy(trueTimes: scoredTruth, detectedTimes: steps, within: bout,
                                                            toleranceSeconds: toleranceSeconds))
                }
            }
            table.rows.append(row)
        }
        if !table.rows.isEmpty { table.print() }
        BenchReport(kinds: kinds, scores: scores).print()
        if let json { try BenchReport.writeJSONLines(scores, to: json) }
        latency.print()
        if throughputSeconds > 0 { try printThroughput(traces: traces, kind: kinds[0]) }
    }

    /// One trace's scores for one detector, by what its truth is.
    static func score(_ trace: Trace, detector: StepDetectorKind, steps: [Double], ungatedSteps: [Double]?, scoredTruth: [Double],
                      recordedSeconds: Double, toleranceSeconds: Double) -> TraceScore {
        let meta = trace.meta
        var score = TraceScore(set: trace.folder, trace: trace.name, placement: meta.placement, person: meta.person,
                               detector: detector.rawValue, truth: trace.kind)
        score.detectedCount = steps.count
        score.recordedSeconds = recordedSeconds
        switch trace.kind {
        case .instants:
            let accuracy = StepMatching.accuracy(trueTimes: scoredTruth, detectedTimes: steps, toleranceSeconds: toleranceSeconds)
            score.trueCount = accuracy.trueCount
            score.matchedCount = accuracy.matchedCount
            let bouts = meta.walkingBout.map { [$0] } ?? WalkingRecall.bouts(trueTimes: scoredTruth)
            score.walkingRecall = WalkingRecall.perStep(trueTimes: scoredTruth, detectedTimes: steps, bouts: bouts,
                                                        toleranceSeconds: toleranceSeconds)
            score.gateRecall = ungatedSteps.map {
                WalkingRecall.gateShare(trueTimes: scoredTruth, gatedTimes: steps, ungatedTimes: $0, bouts: bouts, toleranceSeconds: toleranceSeconds)
            }
        case .count:
            score.trueCount = meta.stepCount ?? 0
            if let walk = meta.walkingBout {
                // A step is reported at its own instant; a second either side takes in the first and last footfall.
                score.detectedInWalk = steps.filter { (walk.lowerBound - 1)...(walk.upperBound + 1) ~= $0 }.count
                score.walkingRecall = WalkingRecall.perSecond(detectedTimes: steps, walk: walk)
                score.gateRecall = ungatedSteps.map { WalkingRecall.gateShare(gatedTimes: steps, ungatedTimes: $0, walk: walk) }
            }
        case .labels:
            for segment in meta.segments {
                score.activitySteps[segment.activity] = steps.filter { t in segment.windows.contains { $0.contains(t) } }.count
                score.activitySeconds[segment.activity] = segment.windows.reduce(0) { $0 + $1.upperBound - $1.lowerBound }
            }
        case .stepFree:
            break
        }
        return score
    }

    /// One streaming pass over a trace: every detector's pipeline, and the report delay of the first. Also returns
    /// the seconds recorded: the sum of the sampling intervals, less any gap the pipeline restarts after.
    static func detect(_ trace: Trace, kinds: [StepDetectorKind], units: RecordingUnits, jitter: ClockJitter, latency: inout LatencyProbe) throws
        -> (steps: [[Double]], recordedSeconds: Double, ungated: [Double]?) {
        var jitter = jitter
        var pipelines = kinds.map { StepPipeline(detector: $0.make(sampleRateHz: 60)) }
        // The peak detector without its walking gate, beside it: what the gate let through of what it was offered.
        let ungatedIndex = kinds.contains(.peak) ? pipelines.count : nil
        if ungatedIndex != nil {
            var configuration = PeakStepDetector.Configuration(sampleRateHz: 60)
            configuration.gate = nil
            pipelines.append(StepPipeline(detector: PeakStepDetector(configuration: configuration)))
        }
        var steps = Array(repeating: [Double](), count: pipelines.count)
        var recorded = 0.0, last = Double.nan
        let gap = pipelines.first?.resampler.maximumGapSeconds ?? 0.5
        latency.startTrace()
        let stats = try RecordingReader.stream(path: trace.accelPath, units: units) { chunk in
            jitter.apply(&chunk.samples)
            for (k, pipeline) in pipelines.enumerated() { pipeline.process(chunk.samples) { steps[k].append($0) } }
            latency.feed(chunk.samples)
            for sample in chunk.samples {
                let interval = sample.time - last
                if interval > 0 && interval <= gap { recorded += interval }
                last = sample.time
            }
        }
        // On standard error: standard output is the tables.
        if let notice = stats.unitsNotice { FileHandle.standardError.write(Data("stepd: \(notice)\n".utf8)) }
        return (Array(steps.prefix(kinds.count)), recorded, ungatedIndex.map { steps[$0] })
    }

    /// How long after its instant each step is reported: steps that come alone are inside a bout; steps that
    /// come together are a bout's first steps, counted when the bout is confirmed, or a faint footfall
    /// counted with the next one; a step that came while the device had tilted waits for the next (or the
    /// end of its wait); a bout's closing step comes when the pause has outlasted a step.
    struct LatencyProbe {
        let kind: StepDetectorKind
        var pipeline: StepPipeline
        /// The peak detector, kept typed: its walking state tells a bout's closing step from the others.
        var peak: PeakStepDetector?
        var single: [Double] = [], batched: [Double] = [], closing: [Double] = [], waited: [Double] = []
        var reported: [Double] = []

        init(kind: StepDetectorKind) {
            self.kind = kind
            (pipeline, peak) = Self.makePipeline(kind)
        }

        mutating func startTrace() { (pipeline, peak) = Self.makePipeline(kind) }

        private static func makePipeline(_ kind: StepDetectorKind) -> (StepPipeline, PeakStepDetector?) {
            guard kind == .peak else { return (StepPipeline(detector: kind.make(sampleRateHz: 60)), nil) }
            let peak = PeakStepDetector(sampleRateHz: 60)
            return (StepPipeline(detector: peak), peak)
        }

        mutating func feed(_ samples: [Sample]) {
            for sample in samples {
                let wasWalking = peak?.isWalking ?? false, waiting = peak?.waitingStepTime
                reported.removeAll(keepingCapacity: true)
                pipeline.process(CollectionOfOne(sample)) { reported.append($0) }
                guard let last = reported.last else { continue }
                var inBout = reported[...]
                if wasWalking && peak?.isWalking == false {
                    closing.append(sample.time - last)
                    inBout = inBout.dropLast()
                }
                if let waiting, inBout.first == waiting {
                    waited.append(sample.time - waiting)
                    inBout = inBout.dropFirst()
                }
                for t in inBout { inBout.count == 1 ? single.append(sample.time - t) : batched.append(sample.time - t) }
            }
        }

        func print() {
            func percentile(_ values: [Double], _ p: Double) -> Double {
                guard !values.isEmpty else { return .nan }
                let sorted = values.sorted()
                return sorted[min(sorted.count - 1, Int(p * Double(sorted.count - 1)))]
            }
            Swift.print("\nreport delay (\(kind.rawValue)): " + String(format: "in-bout steps %d, median %.2f s, p99 %.2f s, max %.2f s; "
                               + "steps reported together (a bout's first steps at its confirmation, a missed footfall with the next) %d, median %.2f s, max %.2f s; "
                               + "steps that waited while the device had tilted %d, median %.2f s, max %.2f s; "
                               + "closing steps (when the pause outlasts a step) %d, median %.2f s, max %.2f s",
                               single.count, percentile(single, 0.5), percentile(single, 0.99), single.max() ?? .nan,
                               batched.count, percentile(batched, 0.5), batched.max() ?? .nan,
                               waited.count, percentile(waited, 0.5), waited.max() ?? .nan,
                               closing.count, percentile(closing, 0.5), closing.max() ?? .nan))
        }
    }

    /// Streams every trace from its file through the pipeline (resampler and detector), again and again, and
    /// times the pipeline alone by this thread's CPU clock (on a shared machine wall time also counts the time
    /// other processes had the core; both are printed), then the whole pass, split into gunzip, parse, pipeline.
    func printThroughput(traces: [Trace], kind: StepDetectorKind) throws {
        var processed = 0, stepsSeen = 0, rounds = 0
        var cpu = 0.0, pipelineWall = 0.0
        var read = RecordingStreamStats()
        let wallStart = RecordingReader.monotonicSeconds()
        repeat {
            for trace in traces {
                let pipeline = StepPipeline(detector: kind.make(sampleRateHz: 60))
                let stats = try RecordingReader.stream(path: trace.accelPath, units: units) { chunk in
                    let cpu0 = Self.threadCPUSeconds(), wall0 = RecordingReader.monotonicSeconds()
                    pipeline.process(chunk.samples) { _ in stepsSeen += 1 }
                    cpu += Self.threadCPUSeconds() - cpu0
                    pipelineWall += RecordingReader.monotonicSeconds() - wall0
                }
                processed += stats.samples
                read.gunzipSeconds += stats.gunzipSeconds
                read.parseSeconds += stats.parseSeconds
            }
            rounds += 1
        } while cpu < throughputSeconds
        let wall = RecordingReader.monotonicSeconds() - wallStart
        let rate = Double(processed) / cpu
        Swift.print("\nthroughput (\(kind.rawValue), one core): " + String(format: "%d samples x %d rounds in %.2f s of CPU time = %.2f million samples/s (wall clock %.2f s: %.2f million/s; %d steps per round)",
                           processed / rounds, rounds, cpu, rate / 1e6, pipelineWall, Double(processed) / pipelineWall / 1e6, stepsSeen / rounds))
        Swift.print(String(format: "end to end, streamed from the files: %.2f s wall = %.2f million samples/s; gunzip %.2f s, parse %.2f s, pipeline %.2f s",
                           wall, Double(processed) / wall / 1e6, read.gunzipSeconds, read.parseSeconds, pipelineWall))
        if let reference = referenceSamplesPerSecond, reference > 0 {
            Swift.print(String(format: "numpy/scipy reference: %.3f million samples/s; the Swift pipeline is %.0fx faster",
                               reference / 1e6, rate / reference))
        }
    }

    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func loadTraces(in folder: String) throws -> [Trace] {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(folder) is not a folder")
        }
        let base = URL(fileURLWithPath: folder).standardizedFileURL
        if let trace = try loadTrace(at: base, folderName: base.deletingLastPathComponent().lastPathComponent) { return [trace] }
        let children = try fm.contentsOfDirectory(atPath: base.path).sorted()
        return try children.compactMap { try loadTrace(at: base.appendingPathComponent($0), folderName: base.lastPathComponent) }
    }

    static func loadTrace(at url: URL, folderName: String) throws -> Trace? {
        let fm = FileManager.default
        let stepsPath = url.appendingPathComponent("steps.csv").path
        let accel = ["accel.csv.gz", "accel.csv"].map { url.appendingPathComponent($0).path }.first { fm.fileExists(atPath: $0) }
        guard let accelPath = accel else { return nil }
        let metaPath = url.appendingPathComponent("meta.json").path
        let hasSteps = fm.fileExists(atPath: stepsPath)
        guard hasSteps || fm.fileExists(atPath: metaPath) else { return nil }
        let meta = fm.fileExists(atPath: metaPath) ? try TraceMeta(path: metaPath) : TraceMeta()
        var trace = Trace(folder: folderName, name: url.lastPathComponent, accelPath: accelPath, truth: [], meta: meta)
        if hasSteps {
            trace.truth = try readStepTimes(path: stepsPath)
            trace.kind = meta.stepFree ? .stepFree : .instants
        } else if meta.stepCount != nil {
            guard meta.walkingBout != nil else { throw TraceError(description: "\(metaPath): a step_count needs the walk's walking_bout_s") }
            trace.kind = .count
        } else if meta.segments.contains(where: { $0.activity == "walking" }) {
            trace.kind = .labels
        } else {
            return nil
        }
        return trace
    }

    /// Reads a `steps.csv`: a header `t`, then one step time per line, seconds.
    static func readStepTimes(path: String) throws -> [Double] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw TraceError(description: "cannot read \(path)") }
        var times: [Double] = []
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let field = line.trimmingCharacters(in: .whitespaces)
            if field.isEmpty || (index == 0 && field == "t") { continue }
            guard let t = Double(field) else { throw TraceError(description: "\(path):\(index + 1): expected a step time, found '\(field)'") }
            times.append(t)
        }
        return times
    }
}

/// A trace folder whose files cannot be read: named with the file and line, without the command's usage.
struct TraceError: Error, CustomStringConvertible {
    var description: String
}
