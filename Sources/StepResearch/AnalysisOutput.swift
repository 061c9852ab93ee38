import ArgumentParser
import Foundation
import Glibc
import StepProcessing
import StepProtocol

/// What `stepd analyze` writes (docs/analysis.md has each format with an example).
enum AnalysisFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// One line: steps, duration, samples, detector (and gaps, when there are any).
    case summary
    /// steps, step_times, detector, samples, duration_s, and the days, bouts and gaps.
    case json
    /// `time,steps,cadence_spm,walking_s`, one row a recorded minute.
    case minutes
    /// `date,steps,distance_m,walking_min,bouts,peak_1min_spm,peak_30min_spm,recorded_min`.
    case daily
    /// `start,end,steps,cadence_spm` and the gait measures, one row a walking bout.
    case bouts
    /// `start,end,excursion_m,step_length_m`, one row a step the inverted pendulum measured (at the waist).
    case steps

    /// The file a format is written to in `--output DIR`, after the recording's name.
    func fileName(for name: String) -> String? {
        switch self {
        case .summary: return nil
        case .json: return name + ".json"
        case .minutes, .daily, .bouts, .steps: return "\(name).\(rawValue).csv"
        }
    }

    static let minutesHeader = "time,steps,cadence_spm,walking_s"
    static let dailyHeader = "date,steps,distance_m,walking_min,bouts,peak_1min_spm,peak_30min_spm,recorded_min"
    static let boutsHeader = "start,end,steps,cadence_spm,stride_time_s,stride_time_cv,regularity,symmetry,step_length_m,speed_mps"
    static let stepsHeader = "start,end,excursion_m,step_length_m"
}

/// A file (or standard output) written through stdio's buffer. A file is written under a temporary name
/// beside it and renamed over `path` once complete: whatever was at `path` (a symbolic link to a file
/// elsewhere, a hard link, a FIFO) is replaced, never written through, and a reader never sees half a file.
final class TextSink {
    private var file: UnsafeMutablePointer<FILE>?
    private let owned: Bool
    let path: String
    /// Where a file is written until `close` renames it to `path`; nil for standard output.
    private let temporaryPath: String?

    /// Standard output, through a stream of its own on a duplicate of the descriptor (C's `stdout` is a
    /// global the compiler cannot prove safe), flushed and closed by `close` as a file's is.
    init() throws {
        let descriptor = dup(STDOUT_FILENO)
        guard descriptor >= 0, let file = fdopen(descriptor, "w") else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { Glibc.close(descriptor) }
            throw AnalysisFailure(description: "cannot write standard output: \(reason)", status: .cantCreate)
        }
        self.file = file
        owned = true
        path = "standard output"
        temporaryPath = nil
    }

    init(path: String) throws {
        // O_EXCL | O_NOFOLLOW: a new file of our own, never one a link or an earlier file put at the name.
        var descriptor: CInt = -1, temporary = ""
        for _ in 0..<16 {
            temporary = path + ".tmp-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0, let file = fdopen(descriptor, "w") else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { Glibc.close(descriptor); unlink(temporary) }
            throw AnalysisFailure(description: "cannot create \(path): \(reason)", status: .cantCreate)
        }
        self.file = file
        owned = true
        self.path = path
        temporaryPath = temporary
    }

    /// A sink dropped without `close` (its recording failed): its file is not left behind half written.
    deinit {
        guard let file, owned else { return }
        fclose(file)
        if let temporaryPath { unlink(temporaryPath) }
    }

    func line(_ text: String) {
        fputs(text, file)
        fputc(10, file)
    }

    func write(_ text: String) { fputs(text, file) }

    func close() throws {
        guard let file else { return }
        self.file = nil
        var failed = fflush(file) != 0 || ferror(file) != 0
        var code = errno
        if owned && fclose(file) != 0 && !failed { failed = true; code = errno }
        if let temporaryPath {
            if !failed && rename(temporaryPath, path) != 0 { failed = true; code = errno }
            if failed { unlink(temporaryPath) }
        }
        if failed {
            throw AnalysisFailure(description: "cannot write \(path): \(String(cString: strerror(code)))", status: .cantCreate)
        }
    }
}

/// The outputs of one recording: minutes and bouts are written as they complete, days and JSON at the end.
final class AnalysisOutputs {
    private let clock: AnalysisClock
    private let labeler: TimeLabeler
    private let strideMeters: Double
    private var sinks: [AnalysisFormat: TextSink] = [:]
    private var stepTimesWritten = 0
    /// Step times kept for a JSON written later (several recordings' JSON on standard output, one a line).
    let keepsStepTimes: Bool

    /// `files`: format → path; `standardOutput`: the one format written to standard output, if any.
    init(clock: AnalysisClock, strideMeters: Double, files: [AnalysisFormat: String], standardOutput: AnalysisFormat?,
         keepsStepTimes: Bool = false) throws {
        self.clock = clock
        labeler = clock.makeTimeLabeler()
        self.strideMeters = strideMeters
        self.keepsStepTimes = keepsStepTimes
        for (format, path) in files { sinks[format] = try TextSink(path: path) }
        if let format = standardOutput, format != .summary { sinks[format] = try TextSink() }
        sinks[.minutes]?.line(AnalysisFormat.minutesHeader)
        sinks[.bouts]?.line(AnalysisFormat.boutsHeader)
        sinks[.steps]?.line(AnalysisFormat.stepsHeader)
        // The JSON's step times are written as they come, its other keys at the end: memory does not grow.
        sinks[.json]?.write("{\"step_times\":[")
    }

    /// A step, at `time` on the recording's clock (as the JSON's step_times have always been).
    func stepTime(_ time: Double) {
        guard let sink = sinks[.json] else { return }
        let rounded = (time * 1000).rounded() / 1000
        let text = rounded.isFinite && rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : "\(rounded)"
        sink.write(stepTimesWritten == 0 ? text : "," + text)
        stepTimesWritten += 1
    }

    func minute(_ bin: MinuteBin) {
        guard let sink = sinks[.minutes] else { return }
        sink.line("\(labeler.label(bin.startSeconds)),\(bin.steps),\(Self.decimal(bin.cadenceStepsPerMinute)),\(Self.decimal(bin.walkingSeconds))")
    }

    func bout(_ gaitBout: GaitBout) {
        if let sink = sinks[.bouts] {
            let bout = gaitBout.bout, gait = gaitBout.gait.rounded()
            let measures = [gait.strideTimeSeconds, gait.strideTimeCV, gait.regularity, gait.symmetry,
                            gait.stepLengthMeters, gait.speedMetersPerSecond].map { $0.map { "\($0)" } ?? "" }
            sink.line("\(labeler.label(bout.start, fractional: true)),\(labeler.label(bout.end, fractional: true)),"
                      + "\(bout.steps),\(Self.decimal(bout.cadenceStepsPerMinute)),"
                      + measures.joined(separator: ","))
        }
        if let sink = sinks[.steps] {
            // Seconds on the recording's clock, as the JSON's step_times.
            for step in gaitBout.gait.pendulumSteps {
                sink.line(String(format: "%.3f,%.3f,%.4f,%.3f", step.start, step.end, step.excursionMeters, step.lengthMeters))
            }
        }
    }

    /// Writes the days and the JSON, and closes every file.
    func finish(_ result: AnalysisResult) throws {
        if let sink = sinks[.daily] {
            sink.line(AnalysisFormat.dailyHeader)
            for day in result.days {
                sink.line([clock.dayLabel(day.day), String(day.steps), Self.decimal(Double(day.steps) * strideMeters),
                           Self.decimal(day.walkingSeconds / 60), String(day.bouts),
                           day.peakOneMinuteStepsPerMinute.map(String.init) ?? "",
                           day.peakThirtyMinuteStepsPerMinute.map(Self.decimal) ?? "", String(day.recordedMinutes)]
                    .joined(separator: ","))
            }
        }
        if let sink = sinks[.json] {
            // "{...rest}" without its brace closes the object whose step_times were written as they came.
            let rest = try result.json(clock: clock, strideMeters: strideMeters, stepTimes: nil)
            sink.line("]," + rest.dropFirst())
        }
        var firstError: Error?
        for sink in sinks.values {
            do { try sink.close() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// One decimal, as the protocol rounds cadences and distances.
    static func decimal(_ value: Double) -> String {
        guard value.isFinite else { return "" }
        let rounded = (value * 10).rounded() / 10
        // Whole numbers without ".0"; Int(_:) only where it cannot trap.
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(format: "%.1f", rounded)
    }
}

/// Why one recording could not be analysed, with the exit status it stands for.
struct AnalysisFailure: Error, CustomStringConvertible {
    let description: String
    let status: ExitStatus
}
