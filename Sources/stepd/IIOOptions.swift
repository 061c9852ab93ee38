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
}
