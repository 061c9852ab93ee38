import Foundation
import Logging
import StepAcquisition
import StepEngine
import StepProcessing
import StepService

/// Which barometer floors are counted from, matching the accelerometer's source: a replay brings its own
/// pressure file (or none), a live accelerometer is paired with an IIO barometer unless `--no-barometer`.
enum BarometerChoice {
    /// Starts the barometer for `source` feeding `engine`; returns it for stopping, or nil when there is
    /// none to stop (then STATUS says why).
    static func start(for source: SourceChoice.Chosen, options: IIOOptions, engine: Engine, logger: Logger) -> IIOBarometerSource? {
        if case .replay(let replay) = source {
            let names = PressureFile.candidates(besideRecording: replay.path).map { ($0 as NSString).lastPathComponent }
            // Ignored rather than refused, so that a stepd.conf naming the board's barometer still lets a
            // recording play; but said, so that nobody expects floors from the sensor.
            if let named = options.barometer {
                logger.warning("--barometer \(named) is ignored: a replay's barometer is the pressure file beside its recording (\(names.joined(separator: " or ")))")
            }
            if replay.pressurePath == nil {
                engine.barometerIdentified(kind: "none", description: "", rateHz: nil)
                engine.barometerStateChanged(.unavailable(reason: "no pressure file beside the recording (\(names.joined(separator: " or ")))"))
            }
            return nil
        }
        guard let barometer = options.makeBarometer(logger: logger) else {
            engine.barometerIdentified(kind: "none", description: "", rateHz: nil)
            engine.barometerStateChanged(.unavailable(reason: "barometer disabled (--no-barometer)"))
            return nil
        }
        barometer.start(sink: engine)
        return barometer
    }
}
