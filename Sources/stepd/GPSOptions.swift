import ArgumentParser
import StepAcquisition
import StepService

/// The daemon's position options: where gpsd is, and how the track and visits are built.
struct GPSOptions: ParsableArguments {
    @Option(name: .customLong("gpsd"), help: "gpsd's address, HOST:PORT.")
    var address: String = "localhost:2947"

    @Flag(name: .customLong("no-gps"), help: "Do not read positions from gpsd.")
    var disabled = false

    @Option(name: .customLong("gps-retry-s"), help: "First retry delay after gpsd is lost (s); doubles up to 30 s.")
    var firstRetrySeconds: Double = 2

    @Option(name: .customLong("track-max-eph-m"), help: "Fixes with a larger horizontal error (m) stay out of the track.")
    var maximumEphMeters: Double = 25

    @Option(name: .customLong("visit-radius-m"), help: "A visit's radius (m).")
    var visitRadiusMeters: Double = 100

    @Option(name: .customLong("visit-min-stay-s"), help: "The shortest stay that makes a visit (s).")
    var visitMinimumStaySeconds: Double = 300

    func validate() throws {
        do { _ = try GPSDAddress(parsing: address) } catch { throw ValidationError("\(error)") }
        for (name, value) in [("--gps-retry-s", firstRetrySeconds), ("--track-max-eph-m", maximumEphMeters),
                              ("--visit-radius-m", visitRadiusMeters), ("--visit-min-stay-s", visitMinimumStaySeconds)] {
            guard value > 0, value.isFinite else { throw ValidationError("\(name) must be a positive number") }
        }
    }

    /// The gpsd source (nil with --no-gps), after writing the track and visit settings into `location`.
    func makeSource(configuring location: inout LocationConfiguration) throws -> GPSDSource? {
        let parsed = try GPSDAddress(parsing: address)
        location.gpsd = parsed.description
        location.enabled = !disabled
        location.track.maximumEphMeters = maximumEphMeters
        location.visits.radiusMeters = visitRadiusMeters
        location.visits.minimumStaySeconds = visitMinimumStaySeconds
        guard !disabled else { return nil }
        var configuration = GPSDSource.Configuration()
        configuration.address = parsed
        configuration.firstRetrySeconds = firstRetrySeconds
        configuration.maximumRetrySeconds = max(30, firstRetrySeconds)
        return GPSDSource(configuration: configuration)
    }
}
