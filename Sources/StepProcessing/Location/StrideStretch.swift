import Foundation

/// Cuts the track into stretches walked under a good fix, for calibrating the stride (distance by GPS over
/// steps counted meanwhile). A stretch breaks on a fix worse than `maximumEphMeters` or a gap in fixes,
/// and completes once it has covered `minimumMeters` of counted track distance; long stretches keep the
/// track's jitter threshold (the last uncounted hop, a few metres) small beside the distance.
public struct StrideStretch: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var minimumMeters = 200.0
        /// "High" accuracy, as POSITION's accuracy class.
        public var maximumEphMeters = 15.0
        public var maximumGapSeconds = 5.0
        public init() {}
    }

    public let configuration: Configuration
    private var start: (meters: Double, steps: Int)?
    private var lastFixTime: Date?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Feeds an accepted fix with the track's distance after it and the step count now; returns a
    /// completed stretch, after which the next one starts here.
    public mutating func add(fixTime: Date, ephMeters: Double?, trackDistanceMeters: Double,
                             steps: Int) -> (meters: Double, steps: Int)? {
        defer { lastFixTime = fixTime }
        guard let eph = ephMeters, eph <= configuration.maximumEphMeters else {
            start = nil
            return nil
        }
        if let last = lastFixTime, fixTime.timeIntervalSince(last) > configuration.maximumGapSeconds { start = nil }
        guard let from = start, steps >= from.steps else {
            start = (trackDistanceMeters, steps)
            return nil
        }
        let meters = trackDistanceMeters - from.meters
        guard meters >= configuration.minimumMeters else { return nil }
        start = (trackDistanceMeters, steps)
        return (meters, steps - from.steps)
    }
}
