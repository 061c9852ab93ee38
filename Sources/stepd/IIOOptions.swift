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

    var uri: String { iioURI ?? "local:" }

    /// Prints every accelerometer; a context that cannot be opened is a clear error, not a crash.
    func listAccelerometers() throws {
        let found: [AccelerometerDescription]
        do { found = try IIODiscovery.accelerometers(uri: uri) } catch {
            throw StartFailure(description: "\(error)", status: .unavailable).exit()
        }
        if found.isEmpty {
            print("no IIO accelerometer at \(uri)")
            return
        }
        print(found.map(\.listing).joined(separator: "\n\n"))
    }

    /// The IIO source when one was asked for (`--device`, `--iio-uri`) or, with no `--replay`, when an
    /// accelerometer is present now; nil means "fall back to the bundled recording".
    func source(replayGiven: Bool, logger: Logger) -> SampleSource? {
        let explicit = device != nil || iioURI != nil
        if replayGiven && !explicit {
            logger.debug("source: --replay without --device or --iio-uri: not looking for an IIO accelerometer")
            return nil
        }
        let source = IIOAccelerometerSource(uri: uri, selector: device)
        if explicit || source.kind != "iio" {
            let why = explicit ? "asked for with --device/--iio-uri" : "the first accelerometer found"
            logger.debug("source: the IIO accelerometer \(source.description) through \(uri) (\(why)), read as \(source.kind)")
            logRateChoice(logger: logger)
            return source
        }
        logger.debug("source: no IIO accelerometer at \(uri)\(replayGiven ? "; replaying as asked" : "")")
        return nil
    }

    /// What the source will ask the device for: the smallest rate at or above the pipeline's 60 Hz.
    private func logRateChoice(logger: Logger) {
        guard logger.logLevel <= .debug,
              let found = try? IIODiscovery.accelerometers(uri: uri).first(where: { device.map($0.matches) ?? true })
        else { return }
        let available = found.ratesHz.map { ConfigOption.Kind.format($0) }.joined(separator: ", ")
        if let chosen = IIODiscovery.chooseRate(from: found.ratesHz) {
            logger.debug("rate: \(found.displayName) offers \(available) Hz; asking for \(ConfigOption.Kind.format(chosen)) Hz, resampled to 60 Hz")
        } else {
            logger.debug("rate: \(found.displayName) lists no sampling_frequency_available; reading at its current \(found.rateHz.map { "\(ConfigOption.Kind.format($0)) Hz" } ?? "rate"), resampled to 60 Hz")
        }
    }
}
