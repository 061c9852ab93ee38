import Foundation

/// A point of the recorded path.
public struct TrackPoint: Sendable, Equatable {
    public var time: Date
    public var coordinate: Coordinate
    public var altitudeMSLMeters: Double?
    public var ephMeters: Double
    public var mode: FixMode
    public var satellitesUsed: Int
}

/// Builds the path from accepted fixes and measures its length without counting a stationary
/// receiver's jitter: a move counts only when the fix lies farther from the last counted point (the
/// anchor) than the larger of the two fixes' horizontal errors, and at least `minimumMoveMeters`.
public struct TrackBuilder: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Fixes less certain than this (eph, m) stay out of the path.
        public var maximumEphMeters = 25.0
        /// The smallest move counted, however small the receiver's error estimate.
        public var minimumMoveMeters = 5.0
        /// The path keeps at most this many points (a day at 1 Hz), dropping the oldest.
        public var maximumPoints = 86_400
        public init() {}
    }

    public let configuration: Configuration
    public private(set) var points: [TrackPoint] = []
    public private(set) var distanceMeters = 0.0
    /// Points dropped from the front because the path reached `maximumPoints`.
    public private(set) var droppedPoints = 0
    /// Accepted fixes left out because their eph was over `maximumEphMeters`: why a receiver that reports
    /// positions can leave the path empty (a ±33 m receiver under the default 25 m), said by `stepctl track`.
    public private(set) var fixesOverMaximumEph = 0
    private var anchor: TrackPoint?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Adds an accepted fix; returns false when its error is unknown or above the bound.
    @discardableResult
    public mutating func add(_ fix: Fix) -> Bool {
        guard fix.hasPosition, let time = fix.time, let eph = fix.ephMeters, eph.isFinite else { return false }
        guard eph <= configuration.maximumEphMeters else {
            fixesOverMaximumEph += 1
            return false
        }
        let point = TrackPoint(time: time, coordinate: fix.coordinate, altitudeMSLMeters: fix.altitudeMSLMeters,
                               ephMeters: eph, mode: fix.mode, satellitesUsed: fix.satellitesUsed)
        append(point)
        guard let from = anchor else {
            anchor = point
            return true
        }
        let hop = Geodesy.distanceMeters(from.coordinate, point.coordinate)
        if hop > max(from.ephMeters, point.ephMeters, configuration.minimumMoveMeters) {
            distanceMeters += hop
            anchor = point
        }
        return true
    }

    private mutating func append(_ point: TrackPoint) {
        points.append(point)
        if points.count > configuration.maximumPoints {
            // Drop a tenth at once so that trimming is rare rather than a shift per fix.
            let excess = points.count - configuration.maximumPoints + configuration.maximumPoints / 10
            let dropped = min(excess, points.count - 1)
            points.removeFirst(dropped)
            droppedPoints += dropped
        }
    }
}
