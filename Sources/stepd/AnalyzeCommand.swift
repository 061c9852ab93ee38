import ArgumentParser
import Foundation
import StepAcquisition
import StepProcessing
import StepProtocol

/// Runs the daemon's very pipeline over a recording as fast as possible.
struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count the steps in a t,x,y,z recording (CSV, plain or gzip) with the daemon's pipeline.")

    @Option(help: "Step detector: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var detector: String = StepDetectorKind.default.rawValue

    @Flag(help: "Print JSON: steps, step_times (seconds on the file's clock), detector, samples, duration_s.")
    var json = false

    @Argument(help: "The recording.")
    var file: String

    struct Result: Encodable {
        var steps: Int
        var step_times: [Double]
        var detector: String
        var samples: Int
        var duration_s: Double
        var floors_ascended: Int?
        var floors_descended: Int?
    }

    func run() throws {
        guard let kind = StepDetectorKind(rawValue: detector) else {
            throw ValidationError("unknown detector '\(detector)'; known: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let samples: [Sample]
        // A bad recording is the file's fault, not the command line's: the error names it, without the usage.
        samples = try RecordingReader.read(path: file)
        let pipeline = StepPipeline(detector: kind.make(sampleRateHz: 60))
        var times: [Double] = []
        pipeline.process(samples) { times.append($0) }
        let floors = try AnalyzeFloors.count(recording: file, stepTimes: times)
        let result = Result(steps: times.count, step_times: times.map { ($0 * 1000).rounded() / 1000 },
                            detector: kind.rawValue, samples: samples.count,
                            duration_s: samples[samples.count - 1].time - samples[0].time,
                            floors_ascended: floors?.ascended, floors_descended: floors?.descended)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("\(file): \(result.steps) steps in \(String(format: "%.1f", result.duration_s)) s "
                  + "(\(result.samples) samples, detector \(result.detector))"
                  + (floors.map { ", floors \($0.ascended) up, \($0.descended) down" } ?? ""))
        }
    }
}
