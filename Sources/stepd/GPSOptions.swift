import ArgumentParser
import StepAcquisition
import StepProcessing
import StepService

/// The daemon's position options: where gpsd is, and how the track and visits are built.
struct GPSOptions: ParsableArguments {
    @Option(.named("gpsd")) var address: String
    @Flag(.named("no_gps")) var disabled: Bool
    @Option(.named("gps_retry_s")) var firstRetrySeconds: Double
    @Option(.named("track_max_eph_m")) var maximumEphMeters: Double
    @Option(.named("visit_radius_m")) var visitRadiusMeters: Double
    @Option(.named("visit_min_stay_s")) var visitMinimumStaySeconds: Double

    // The address is parsed by the option's kind already; this keeps the reason in gpsd's own words.
    func validate() throws {
        do { _ = try GPSDAddress(parsing: address) } catch { throw ValidationError("\(error)") }
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
        configuration.maximumRetrySeconds = max(configuration.maximumRetrySeconds, firstRetrySeconds)
        return GPSDSource(configuration: configuration)
    }
}
