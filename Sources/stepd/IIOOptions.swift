import ArgumentParser
import Foundation
import Logging
import StepAcquisition
import StepService

/// The IIO accelerometer flags of `stepd run`, and how they turn into a source.
struct IIOOptions: ParsableArguments {
    @Flag(.named("list_devices")) var listDevices: Bool
    @Option(.named("device")) var device: String?
    @Option(.named("iio_uri")) var iioURI: String?
    @Option(.named("barometer")) var barometer: String?
    @Flag(.named("no_barometer")) var noBarometer: Bool
    @Flag(.named("sensor_step_counter")) var sensorStepCounter: Bool

    var uri: String { iioURI ?? "local:" }

    /// A barometer named and none wanted is a contradiction (a stepd.conf and a command line that disagree
    /// included), not a choice to make silently for one of them.
    func validate() throws {
        if let barometer, noBarometer {
            throw ValidationError("--barometer \(barometer) names the barometer to read and --no-barometer reads none: give one of them")
        }
    }

    /// Prints every accelerometer and barometer; a context that cannot be opened is a clear error, not a crash.
    func listAccelerometers() throws {
        let found: [AccelerometerDescription]
        let barometers: [BarometerDescription]
        do {
            found = try IIODiscovery.accelerometers(uri: uri)
            barometers = try IIOBarometerDiscovery.barometers(uri: uri)
        } catch {
            throw StartFailure(description: "\(error)", status: .unavailable).exit()
        }
        var paragraphs = found.isEmpty ? ["no IIO accelerometer at \(uri)"] : found.map(\.listing)
        paragraphs += barometers.isEmpty ? ["no IIO barometer at \(uri)"] : barometers.map(\.listing)
        print(paragraphs.joined(separator: "\n\n"))
    }

    /// The barometer to read beside an IIO accelerometer; nil with --no-barometer.
    func makeBarometer(logger: Logger) -> IIOBarometerSource? {
        guard !noBarometer else { return nil }
        let source = IIOBarometerSource(uri: uri, selector: barometer)
        let which = barometer.map { "'\($0)'" } ?? "found first"
        logger.debug("barometer choice: the IIO barometer \(which) through \(uri): \(source.initialDescription ?? "none yet, waiting for one")")
        return source
    }
}
