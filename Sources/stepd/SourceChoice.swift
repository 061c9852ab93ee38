import Foundation
import Logging
import StepAcquisition
import StepProcessing

/// Which accelerometer source the daemon reads. A pedometer must never invent steps, so a recording plays
/// only when asked for:
/// - `--demo`: the bundled real recording in a loop, marked as a demo, its history thrown away at exit;
/// - `--replay FILE` (without `--device` or `--iio-uri`): that recording;
/// - otherwise an IIO accelerometer, the one named or the first; with none present the source waits for one.
struct SourceChoice {
    var demo: Bool
    var replay: String?
    var speed: Double
    var loop: Bool
    /// --units: what the replayed recording's x, y, z are in.
    var units = RecordingUnits.auto
    var device: String?
    var iioURI: String?
    /// False with --no-barometer: a recording's pressure file is then left unread too.
    var barometer = true
    /// --sensor-step-counter: the accelerometer's own counter counts while capture may stop.
    var sensorStepCounter = false

    /// The source chosen, by kind: what else the daemon does depends on which it is (a replay brings its own
    /// pressure file; an accelerometer may not be there yet).
    enum Chosen: Sendable {
        case replay(ReplaySource)
        case accelerometer(IIOAccelerometerSource)

        var source: SampleSource {
            switch self {
            case .replay(let replay): return replay
            case .accelerometer(let iio): return iio
            }
        }

        /// Starts reading into the engine; a replay's pressure file goes to the same engine as its barometer.
        func start(sink: SampleSink & BarometerSink) {
            switch self {
            case .replay(let replay): replay.start(sink: sink, barometer: sink)
            case .accelerometer(let iio): iio.start(sink: sink)
            }
        }
    }

    func makeSource(logger: Logger) throws -> Chosen {
        if demo {
            let candidates = DefaultRecording.candidates()
            guard let bundled = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) else {
                throw RecordingError.missing(path: candidates.first ?? DefaultRecording.fileName)
            }
            logger.debug("source choice: --demo: the bundled recording \(bundled), in a loop at speed \(speed)")
            return .replay(try ReplaySource(path: bundled, speed: speed, loop: true, demo: true, pressure: barometer))
        }
        if let replay, device == nil, iioURI == nil {
            logger.debug("source choice: --replay \(replay) at speed \(speed)\(loop ? ", in a loop" : "")")
            return .replay(try ReplaySource(path: replay, speed: speed, loop: loop, units: units, pressure: barometer))
        }
        if replay != nil { logger.debug("source choice: --replay ignored: an accelerometer was named") }
        let uri = iioURI ?? "local:"
        let source = IIOAccelerometerSource(uri: uri, selector: device, sensorStepCounter: sensorStepCounter)
        let which = device.map { "'\($0)'" } ?? "found first"
        let found = source.foundDevice ? "\(source.description), \(source.kind)" : "none yet, waiting for one"
        logger.debug("source choice: the IIO accelerometer \(which) through \(uri): \(found)")
        return .accelerometer(source)
    }

    /// The start banner's first line.
    static func banner(for chosen: Chosen) -> String {
        let source = chosen.source
        if source.isDemo { return "stepd: demo: counting steps from \(source.description) (its history is not saved)" }
        if case .accelerometer(let iio) = chosen, !iio.foundDevice {
            return "stepd: no accelerometer yet: waiting for one to appear (stepd --demo plays a recording)"
        }
        return "stepd: counting steps from \(source.description)"
    }
}

/// A demo's history: a fresh directory, removed at exit, so that a demo never writes the system's history.
final class DemoStateDirectory: Sendable {
    let path: String

    struct CreationError: Error, CustomStringConvertible {
        let directory: String
        let reason: String
        var description: String { "cannot create the demo's state directory in \(directory): \(reason)" }
    }

    init() throws {
        let parent = NSTemporaryDirectory()
        var template = Array((parent.hasSuffix("/") ? parent : parent + "/").utf8CString.dropLast()) + Array("stepd-demo.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CreationError(directory: parent, reason: String(cString: strerror(errno)))
        }
        path = String(cString: made)
    }

    func remove(announce: Bool = true) {
        try? FileManager.default.removeItem(atPath: path)
        guard announce else { return }
        print("stepd: demo over; its throwaway history \(path) is removed")
        fflush(nil)
    }
}
