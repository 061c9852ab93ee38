import ArgumentParser
import Foundation
import StepAcquisition
import StepProcessing
import StepProtocol

/// Runs the daemon's very pipeline over recordings as fast as possible: one streaming pass per file, files in
/// parallel, per-minute, daily and bout outputs for research (docs/analysis.md).
package struct Analyze: ParsableCommand {
    package static let configuration = CommandConfiguration(
        abstract: "Count the steps in t,x,y,z recordings (CSV, plain or gzip) with the daemon's pipeline.",
        discussion: """
            Each recording is read once, in constant memory, whatever its length. Without --output, one line a \
            file (or what --format names) goes to standard output, and a total after several files. With \
            --output DIR, each recording's per-minute, daily, bouts and JSON files are written there \
            (--format picks which). Several files are analysed in parallel. Formats: docs/analysis.md.
            """)

    @Option(help: "Step detector: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var detector: String = StepDetectorKind.default.rawValue

    @Flag(help: "Print JSON (the same as --format json): steps, step_times (seconds on the file's clock), detector, samples, duration_s, days, bouts, gaps.")
    var json = false

    @Option(help: "What to write: \(AnalysisFormat.allCases.map(\.rawValue).joined(separator: ", ")). To standard output: one (default summary); with --output: any (repeatable; default all but summary).")
    var format: [AnalysisFormat] = []

    @Option(help: "Folder to write NAME.minutes.csv, NAME.daily.csv, NAME.bouts.csv and NAME.json into, NAME from each recording's file name.")
    var output: String?

    @Option(help: "When the recording's t = 0 was (ISO-8601 with an offset, e.g. 2026-11-20T08:00:00+01:00): times and days are then wall-clock ones in that offset. A t in Unix seconds needs none (its days follow TZ).")
    var start: String?

    @Option(help: "The unit of x, y, z: mps2 (m/s², stepd's format), g (actipy's, stepcount's, Axivity and ActiGraph exports), or auto: the unit the header names (x_g, x_mps2), else g when the gravity in the first 1000 samples is about 1, with a notice.")
    var units: RecordingUnits = .auto

    @Option(help: "The walker's height in metres, for distance (stride 0.414 x height, as the daemon).")
    var height = 1.70

    @Option(help: "Where the device was carried: \(Placement.allCases.map(\.rawValue).joined(separator: ", ")). Step length and speed are given for waist only (docs/gait.md).")
    var placement: String = Placement.default.rawValue

    @Option(help: "Files analysed at once (default: the number of cores).")
    var jobs: Int?

    @Flag(help: "Also print, on standard error, where each file's time went: gunzip, parse, pipeline.")
    var verbose = false

    @Argument(help: "The recordings.")
    var files: [String]

    package func validate() throws {
        guard StepDetectorKind(rawValue: detector) != nil else {
            throw ValidationError("unknown detector '\(detector)'; known: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (0.5...2.5).contains(height) else { throw ValidationError("--height: expected a number from 0.5 to 2.5, found \"\(height)\"") }
        guard Placement(rawValue: placement) != nil else {
            throw ValidationError("--placement: expected one of \(Placement.allCases.map(\.rawValue).joined(separator: ", ")), found \"\(placement)\"")
        }
        if let jobs, jobs < 1 { throw ValidationError("--jobs: expected a whole number from 1, found \"\(jobs)\"") }
        if let start, AnalysisClock.parseStart(start) == nil {
            throw ValidationError("--start: expected an ISO-8601 time with an offset, such as 2026-11-20T08:00:00+01:00, found \"\(start)\"")
        }
        if output == nil {
            let formats = stdoutFormats
            if formats.count > 1 { throw ValidationError("without --output, one --format goes to standard output; found \(formats.map(\.rawValue).joined(separator: ", "))") }
            if files.count > 1, let format = formats.first, format != .summary, format != .json {
                throw ValidationError("--format \(format.rawValue) of several recordings needs --output DIR")
            }
        } else if stdoutFormats.contains(.summary) && stdoutFormats.count == 1 {
            throw ValidationError("--format summary writes no file; with --output, name minutes, daily, bouts or json")
        }
    }

    /// The formats asked for, --json included.
    private var stdoutFormats: [AnalysisFormat] {
        var formats = format
        if json && !formats.contains(.json) { formats.append(.json) }
        return formats
    }

    package init() {}

    package func run() throws {
        let kind = StepDetectorKind(rawValue: detector)!
        // Days and times in the zone --start was written in; else the local one (TZ), for a t in Unix time.
        var configured = RecordingAnalysis.Settings(detector: kind, startUnixSeconds: start.flatMap(AnalysisClock.parseStart),
                                                  strideMeters: StrideModel(heightMeters: height).strideMeters,
                                                  timeZone: start.flatMap(AnalysisClock.startTimeZone) ?? .current)
        configured.gait.placement = Placement(rawValue: placement)!
        configured.gait.heightMeters = height
        configured.units = units
        let settings = configured
        if let output { try Self.makeFolder(output) }
        let names = Self.outputNames(files)
        let fileFormats = output == nil ? [] : (stdoutFormats.isEmpty ? [.minutes, .daily, .bouts, .json] : stdoutFormats.filter { $0 != .summary })
        let printed: AnalysisFormat = output == nil ? (stdoutFormats.first ?? .summary) : .summary
        // Several recordings' JSON goes to standard output one object a line, in order, from the printer.
        let jsonLines = printed == .json && files.count > 1
        let analyses = zip(files, names).map { path, name in
            RecordingAnalysis(path: path, settings: settings) { clock in
                var paths: [AnalysisFormat: String] = [:]
                if let output {
                    for format in fileFormats { paths[format] = output + "/" + format.fileName(for: name)! }
                }
                return try AnalysisOutputs(clock: clock, strideMeters: settings.strideMeters, files: paths,
                                           standardOutput: jsonLines ? nil : printed, keepsStepTimes: jsonLines)
            }
        }
        let runner = AnalysisRunner(analyses: analyses, jobs: min(files.count, jobs ?? ProcessInfo.processInfo.activeProcessorCount))
        let status = runner.run { outcome in
            switch outcome {
            case .success(let result):
                for warning in result.warnings { FileHandle.standardError.write(Data("stepd: \(warning)\n".utf8)) }
                if printed == .summary { print(result.summaryLine) }
                if jsonLines, let line = try? result.json(clock: result.clock, strideMeters: settings.strideMeters,
                                                          stepTimes: result.stepTimes) { print(line) }
                // On standard error: standard output may be a CSV or JSON that a line of figures would break.
                if verbose { FileHandle.standardError.write(Data("stepd: \(result.path):\(result.timingLine)\n".utf8)) }
            case .failure(let failure):
                FileHandle.standardError.write(Data("stepd: \(failure.description)\n".utf8))
            }
            fflush(nil)
        }
        if files.count > 1 && printed == .summary { print(runner.totalLine) }
        if status != .success { throw ExitCode(status.rawValue) }
    }

    static func makeFolder(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            let reason = (error as NSError).userInfo[NSUnderlyingErrorKey].map { "\($0)" } ?? error.localizedDescription
            FileHandle.standardError.write(Data("stepd: cannot create the output folder \(path): \(reason)\n".utf8))
            throw ExitCode(ExitStatus.cantCreate.rawValue)
        }
    }

    /// Each recording's NAME for its output files: the file name without .gz and .csv; recordings whose names
    /// clash (every trace folder's accel.csv.gz) get their folder's name before it.
    static func outputNames(_ paths: [String]) -> [String] {
        func base(_ path: String) -> String {
            var name = (path as NSString).lastPathComponent
            for suffix in [".gz", ".csv"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
            return name
        }
        var names = paths.map(base)
        let counts = Dictionary(names.map { ($0, 1) }, uniquingKeysWith: +)
        for i in names.indices where counts[names[i]]! > 1 {
            let folder = ((paths[i] as NSString).deletingLastPathComponent as NSString).lastPathComponent
            names[i] = folder.isEmpty ? names[i] : folder + "-" + names[i]
        }
        var seen: [String: Int] = [:]
        for i in names.indices {
            seen[names[i], default: 0] += 1
            if seen[names[i]]! > 1 { names[i] += "-\(seen[names[i]]!)" }
        }
        return names
    }
}

/// `--units` of analyze and bench.
extension RecordingUnits: ExpressibleByArgument {}
