import ArgumentParser
import Foundation
import Logging
import StepAcquisition

/// The IIO accelerometer flags of `stepd run`, and how they turn into a source.
struct IIOOptions: ParsableArguments {
    @Flag(help: "List the IIO accelerometers (name, label, id, capture, rates, mount matrix) and exit.")
    var listDevices = false

    @Option(help: "The accelerometer to read: its name, label or iio:deviceN (default: the first one).")
    var device: String?

    @Option(help: "The libiio context: local: (default) or ip:HOST for a board running iiod.")
    var iioURI: String?

    var uri: String { iioURI ?? "local:" }

    /// Prints every accelerometer; a context that cannot be opened is a clear error, not a crash.
    func listAccelerometers() throws {
        let found: [AccelerometerDescription]
        do { found = try IIODiscovery.accelerometers(uri: uri) } catch {
            FileHandle.standardError.write(Data("stepd: \(error)\n".utf8))
            throw ExitCode.failure
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
        if replayGiven && !explicit { return nil }
        let source = IIOAccelerometerSource(uri: uri, selector: device)
        if explicit || source.kind != "iio" {
            logger.info("reading the IIO accelerometer \(source.description) through \(uri)")
            return source
        }
        return nil
    }
}
