import Foundation
import StepAcquisition
import StepProcessing
import StepProtocol

/// One recording's single pass: read in chunks → timeline repair → the daemon's StepPipeline → activity
/// analysis → outputs. Memory stays the same whatever the recording's length (the step times are kept only
/// for the JSON, 8 bytes a step).
///
/// `run` is the one place where a recording's pipeline is built (`makePipeline`) and its samples flow
/// (`feed`); a second input of the same recording (a pressure file beside it) joins here.
final class RecordingAnalysis: Sendable {
    struct Settings: Sendable {
        var detector: StepDetectorKind
        /// The Unix time of the recording's t = 0, from `--start`; nil when unknown.
        var startUnixSeconds: Double?
        var strideMeters: Double
        var timeZone = TimeZone.current
        /// Placement and height for the gait measures of each bout (docs/gait.md).
        var gait = GaitRecorder.Configuration()
        /// What x, y, z are in (`--units`).
        var units = RecordingUnits.auto
    }

    let path: String
    let settings: Settings
    private let makeOutputs: @Sendable (AnalysisClock) throws -> AnalysisOutputs

    init(path: String, settings: Settings, makeOutputs: @escaping @Sendable (AnalysisClock) throws -> AnalysisOutputs) {
        self.path = path
        self.settings = settings
        self.makeOutputs = makeOutputs
    }

    /// The step chain, exactly as the daemon's Engine builds it: the same detector at the same 60 Hz.
    private func makePipeline() -> StepPipeline {
        StepPipeline(detector: settings.detector.make(sampleRateHz: 60, placement: settings.gait.placement))
    }

    /// The barometer's readings beside the recording (`NAME.pressure.csv[.gz]`, PressureFile.swift), counted
    /// into floors with the steps as they are found, each once the detector can report no more steps before
    /// it (as the daemon does); nil without one. A broken pressure file ends the file's analysis as a broken
    /// recording does: 66 unreadable, 65 bad content.
    private func pressureBeside(holdBackSeconds: Double) throws -> StreamedFloors? {
        guard let file = PressureFile.find(besideRecording: path) else { return nil }
        return try StreamedFloors.catching {
            StreamedFloors(reader: try PressureFileReader(path: file), floors: StepAlignedFloors(holdBackSeconds: holdBackSeconds))
        }
    }

    /// Runs the pass. `progress` gets the compressed bytes read and the samples so far, after each chunk.
    func run(progress: (Int, Int) -> Void) throws -> AnalysisResult {
        let pipeline = makePipeline()
        let floors = try pressureBeside(holdBackSeconds: pipeline.detector.longestReportDelaySeconds)
        var state: PassState?
        var result = AnalysisResult(path: path, detector: settings.detector.rawValue)
        let started = RecordingReader.monotonicSeconds()
        do {
            result.read = try RecordingReader.stream(path: path, units: settings.units, acceptingCutShort: true) { chunk in
                if state == nil {
                    state = try PassState(first: chunk.samples[0], settings: settings, floors: floors, makeOutputs: makeOutputs)
                    state!.gait = GaitRecorder(configuration: settings.gait)
                    result.startIgnored = settings.startUnixSeconds != nil && state!.clock.unixOffsetSeconds == 0
                }
                try state!.feed(&chunk, into: pipeline, result: &result)
                progress(chunk.compressedOffset, result.samples)
            }
            result.cutShortAfterLine = result.read.cutShortAfterLine
        } catch let error as RecordingError {
            throw AnalysisFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        }
        guard var state else { throw AnalysisFailure(description: "\(path): no samples", status: .dataError) }
        try state.finish(pipeline: pipeline, result: &result)
        result.wallSeconds = RecordingReader.monotonicSeconds() - started
        return result
    }
}

/// The state of one pass once its first sample has said which clock the recording keeps.
private struct PassState {
    var timeline = RecordingTimeline()
    var activity: ActivityAnalysis
    let outputs: AnalysisOutputs
    let clock: AnalysisClock
    var stepBuffer: [Double] = []
    var floors: StreamedFloors?
    /// The signal and steps each bout's gait measures are computed from, as the daemon keeps them.
    var gait = GaitRecorder()

    init(first: Sample, settings: RecordingAnalysis.Settings, floors: StreamedFloors?, makeOutputs: (AnalysisClock) throws -> AnalysisOutputs) throws {
        // A `t` in Unix time is absolute as it stands; otherwise `--start` (if given) is the time of t = 0.
        let unixTime = first.time >= AnalysisClock.unixTimeThreshold
        clock = AnalysisClock(unixOffsetSeconds: unixTime ? 0 : settings.startUnixSeconds, timeZone: settings.timeZone)
        var configuration = ActivityAnalysis.Configuration()
        configuration.clockOffsetSeconds = clock.analysisOffsetSeconds
        configuration.dayOf = clock.dayOf
        activity = ActivityAnalysis(configuration: configuration)
        outputs = try makeOutputs(clock)
        self.floors = floors
    }

    mutating func feed(_ chunk: inout RecordingChunk, into pipeline: StepPipeline, result: inout AnalysisResult) throws {
        let firstIndex = result.samples
        // Local copies while closures use them: no overlapping access to self.
        var timeline = self.timeline, activity = self.activity, gait = self.gait
        defer { self.timeline = timeline; self.activity = activity; self.gait = gait }
        let lines = chunk.lines
        timeline.repair(&chunk.samples, cover: { activity.cover(from: $0, to: $1) }) { event in
            switch event {
            case .gap(_, let from, let to):
                result.longestGapSeconds = max(result.longestGapSeconds, to - from)
            case .clockBack(let index, let seconds):
                if result.firstClockBack == nil { result.firstClockBack = (lines[index], seconds) }
            }
        }
        try Self.checkRepairedClock(chunk, path: result.path)
        if firstIndex == 0 { result.firstTime = chunk.samples.first { $0.time.isFinite }?.time }
        let t0 = RecordingReader.monotonicSeconds()
        var steps = stepBuffer
        steps.removeAll(keepingCapacity: true)
        pipeline.process(chunk.samples, onUniformSample: { gait.add($0) }, onStep: { steps.append($0) })
        result.pipelineSeconds += RecordingReader.monotonicSeconds() - t0
        let outputs = self.outputs
        // A bout is closed on the analysis clock; its gait is measured on the samples' clock.
        let offset = clock.analysisOffsetSeconds
        func emit(_ bout: ActivityBout) {
            outputs.bout(GaitBout(bout: bout, gait: gait.measures(from: bout.start - offset, to: bout.end - offset)))
        }
        for t in steps {
            gait.step(at: t)
            activity.step(at: t) { emit($0) }
            floors?.step(at: t)
            outputs.stepTime(t)
            if outputs.keepsStepTimes { result.stepTimes.append(t) }
        }
        stepBuffer = steps
        result.samples += chunk.samples.count
        if let latest = timeline.latestTime {
            result.lastTime = latest
            try floors?.advance(to: latest)
            activity.advance(to: latest, minute: { outputs.minute($0) }, bout: { emit($0) })
        }
    }

    /// The reader keeps every time within ±RecordingReader.maximumTimeSeconds, but moving the samples after
    /// each jump back to follow on adds up: a file that jumps back and forth by 10^12 s pushes the clock past
    /// it within a few thousand rows. Such a file is refused at the row where it happens, as a time the reader
    /// refuses is (65), before a clock that no longer tells samples apart reaches the analysis.
    private static func checkRepairedClock(_ chunk: RecordingChunk, path: String) throws {
        let limit = RecordingReader.maximumTimeSeconds
        // Repaired times only go forward: the chunk's last finite one is its largest.
        guard let last = chunk.samples.last(where: { $0.time.isFinite })?.time, last > limit,
              let index = chunk.samples.firstIndex(where: { $0.time > limit }) else { return }
        throw AnalysisFailure(description: "\(path):\(chunk.lines[index]): with the samples after each jump back of the "
                              + "clock moved to follow on, the time passes 10^12 s here; expected times t in seconds "
                              + "from -10^12 to 10^12", status: .dataError)
    }

    mutating func finish(pipeline: StepPipeline, result: inout AnalysisResult) throws {
        let outputs = self.outputs, gait = self.gait, offset = clock.analysisOffsetSeconds
        activity.finish(minute: { outputs.minute($0) }, bout: { bout in
            outputs.bout(GaitBout(bout: bout, gait: gait.measures(from: bout.start - offset, to: bout.end - offset)))
        })
        result.steps = activity.totalSteps
        result.lateSteps = activity.lateSteps
        result.samplesRejected = pipeline.samplesRejected
        result.days = activity.days
        result.bouts = activity.bouts
        result.gaps = timeline.gaps
        result.gapSeconds = timeline.gapSeconds
        result.clockJumpsBack = timeline.clockJumpsBack
        result.clock = clock
        if let counted = try floors?.finish() { result.floors = (counted.ascended, counted.descended) }
        try outputs.finish(result)
    }
}

/// A pressure file read a row at a time beside the recording's pass: before the floors are counted up to a
/// sample time, every reading up to that time is handed over, so that only the readings within the detector's
/// hold-back are held in memory, however long the file.
struct StreamedFloors {
    let reader: PressureFileReader
    var floors: StepAlignedFloors
    /// The first reading past the last sample time, read and not handed over yet.
    private var ahead: PressureReading?
    private var ended = false

    init(reader: PressureFileReader, floors: StepAlignedFloors) {
        self.reader = reader
        self.floors = floors
    }

    mutating func step(at t: Double) { floors.step(at: t) }

    /// Samples have come up to `time`: the readings up to it join, and those the steps have caught up with count.
    mutating func advance(to time: Double) throws {
        try take(until: time)
        floors.advance(to: time)
    }

    /// The recording ended: every reading left counts.
    mutating func finish() throws -> FloorCounter {
        try take(until: .infinity)
        return floors.finish()
    }

    private mutating func take(until time: Double) throws {
        try Self.catching {
            while !ended {
                if ahead == nil { ahead = try reader.next() }
                guard let reading = ahead else { ended = true; break }
                guard reading.time <= time else { break }
                floors.add(reading)
                ahead = nil
            }
        }
    }

    /// A pressure file's fault as the analysis reports a recording's: 66 unreadable, 65 bad content.
    static func catching<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PressureFileError {
            throw AnalysisFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        }
    }
}

/// What one recording gave: counts, days, and where the time went.
struct AnalysisResult {
    var path: String
    var detector: String
    var steps = 0
    var samples = 0
    var samplesRejected = 0
    var firstTime: Double?
    var lastTime: Double?
    /// Only for several recordings' JSON on standard output; a file's JSON writes them as they come.
    var stepTimes: [Double] = []
    /// Floors up and down, when a pressure file lies beside the recording.
    var floors: (ascended: Int, descended: Int)?
    var days: [DaySummary] = []
    var bouts = 0
    var gaps = 0
    var gapSeconds = 0.0
    var longestGapSeconds = 0.0
    /// Steps the detector reported after their minute had been written: counted in the oldest open minute.
    var lateSteps = 0
    var clockJumpsBack = 0
    /// The line where the clock first went back, and by how much.
    var firstClockBack: (line: Int, seconds: Double)?
    /// `--start` was given for a recording whose t is Unix time already.
    var startIgnored = false
    /// Set when the gzip stream ended early: the last line read.
    var cutShortAfterLine: Int?
    var read = RecordingStreamStats()
    var pipelineSeconds = 0.0
    var wallSeconds = 0.0
    var clock = AnalysisClock(unixOffsetSeconds: nil)

    init(path: String, detector: String) {
        self.path = path
        self.detector = detector
    }

    var durationSeconds: Double { (lastTime ?? 0) - (firstTime ?? 0) }

    var walkingSeconds: Double { days.reduce(0) { $0 + $1.walkingSeconds } }

    /// The one line `stepd analyze` prints for the recording (the first part is what it always printed).
    var summaryLine: String {
        var details = ["\(samples) samples", "detector \(detector)"]
        if gaps > 0 {
            details.append(String(format: "%d gap%@, %.1f h not recorded (longest %.1f h)", gaps, gaps == 1 ? "" : "s",
                                  gapSeconds / 3600, longestGapSeconds / 3600))
        }
        if let floors { details.append("floors \(floors.ascended) up, \(floors.descended) down") }
        return "\(path): \(steps) steps in \(String(format: "%.1f", durationSeconds)) s (\(details.joined(separator: ", ")))"
    }

    /// The warnings a user must see, once each: a clock that went back, a stream cut short.
    var warnings: [String] {
        var lines: [String] = []
        if let notice = read.unitsNotice { lines.append(notice) }
        if let (line, seconds) = firstClockBack {
            lines.append(String(format: "%@:%d: the clock goes back %.3f s; the samples from here on are moved to follow on", path, line, seconds)
                         + (clockJumpsBack > 1 ? " (\(clockJumpsBack) jumps back in all, each treated alike)" : ""))
        }
        if startIgnored {
            lines.append("\(path): its t is Unix time already (\(String(format: "%.0f", firstTime ?? 0)) at the start); --start is ignored for it")
        }
        if let line = cutShortAfterLine {
            lines.append("\(path): the gzip stream is cut short after line \(line); analysed up to the last whole row")
        }
        if lateSteps > 0 {
            lines.append("\(path): \(lateSteps) step\(lateSteps == 1 ? " was" : "s were") reported after \(lateSteps == 1 ? "its" : "their") minute had been written; counted in the next minute (the total is right)")
        }
        return lines
    }

    /// The split of one pass's time, for `--verbose`.
    var timingLine: String {
        let rest = max(0, wallSeconds - read.gunzipSeconds - read.parseSeconds - pipelineSeconds)
        return String(format: " %.2f s: gunzip %.2f s, parse %.2f s, pipeline %.2f s, analysis and output %.2f s; %.2f million samples/s",
                      wallSeconds, read.gunzipSeconds, read.parseSeconds, pipelineSeconds, rest,
                      Double(samples) / max(wallSeconds, 1e-9) / 1e6)
    }

    struct JSONDay: Encodable {
        var date: String
        var steps: Int
        var distance_m: Double
        var walking_min: Double
        var bouts: Int
        var peak_1min_spm: Int?
        var peak_30min_spm: Double?
        var recorded_min: Int
    }

    struct JSONBody: Encodable {
        var steps: Int
        var step_times: [Double]?
        var detector: String
        var samples: Int
        var samples_rejected: Int
        var duration_s: Double
        var start: String?
        var walking_s: Double
        var bouts: Int
        var gaps: Int
        var gap_s: Double
        var longest_gap_s: Double
        var clock_jumps_back: Int
        var cut_short: Bool
        var days: [JSONDay]
        /// Only when a pressure file lies beside the recording (docs/barometer.md).
        var floors_ascended: Int?
        var floors_descended: Int?
    }

    /// The JSON object; `stepTimes` nil leaves the key out.
    func json(clock: AnalysisClock, strideMeters: Double, stepTimes: [Double]?) throws -> String {
        func round(_ value: Double, _ scale: Double) -> Double { value.isFinite ? (value * scale).rounded() / scale : 0 }
        let labeler = clock.makeTimeLabeler()
        let body = JSONBody(
            steps: steps, step_times: stepTimes?.map { round($0, 1000) }, detector: detector, samples: samples,
            samples_rejected: samplesRejected, duration_s: round(durationSeconds, 1000),
            start: clock.unixOffsetSeconds.flatMap { offset in firstTime.map { labeler.label($0 + offset, fractional: true) } },
            walking_s: round(walkingSeconds, 10), bouts: bouts, gaps: gaps, gap_s: round(gapSeconds, 10), longest_gap_s: round(longestGapSeconds, 10),
            clock_jumps_back: clockJumpsBack, cut_short: cutShortAfterLine != nil,
            days: days.map { day in
                JSONDay(date: clock.dayLabel(day.day), steps: day.steps, distance_m: round(Double(day.steps) * strideMeters, 10),
                        walking_min: round(day.walkingSeconds / 60, 10), bouts: day.bouts,
                        peak_1min_spm: day.peakOneMinuteStepsPerMinute,
                        peak_30min_spm: day.peakThirtyMinuteStepsPerMinute.map { round($0, 10) }, recorded_min: day.recordedMinutes)
            },
            floors_ascended: floors?.ascended, floors_descended: floors?.descended)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(body), as: UTF8.self)
    }
}
