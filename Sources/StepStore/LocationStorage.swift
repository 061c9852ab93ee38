import Foundation
import StepProcessing

extension LocationRecord {
    /// What the store keeps of it.
    package var storeWrite: StoreWrite {
        switch self {
        case .trackPoint(let point): return .trackPoint(StoredTrackPoint(point))
        case .visit(let visit): return .visit(StoredVisit(visit))
        }
    }
}

extension StoredTrackPoint {
    public init(_ point: TrackPoint) {
        self.init(time: point.time, latitudeDegrees: point.coordinate.latitudeDegrees,
                  longitudeDegrees: point.coordinate.longitudeDegrees, altitudeMSLMeters: point.altitudeMSLMeters,
                  ephMeters: point.ephMeters, mode: point.mode.rawValue, satellitesUsed: point.satellitesUsed)
    }

    /// The point as the fix it came from, to be built into a path again.
    public var fix: Fix {
        Fix(time: time, mode: FixMode(rawValue: mode) ?? .threeD, latitudeDegrees: latitudeDegrees,
            longitudeDegrees: longitudeDegrees, altitudeMSLMeters: altitudeMSLMeters, ephMeters: ephMeters,
            satellitesUsed: satellitesUsed, arrival: time)
    }
}

extension StoredVisit {
    public init(_ visit: Visit) {
        self.init(arrival: visit.arrival, departure: visit.departure, latitudeDegrees: visit.center.latitudeDegrees,
                  longitudeDegrees: visit.center.longitudeDegrees, radiusMeters: visit.radiusMeters,
                  fixCount: visit.fixCount)
    }

    public var visit: Visit {
        Visit(arrival: arrival, departure: departure,
              center: Coordinate(latitudeDegrees: latitudeDegrees, longitudeDegrees: longitudeDegrees),
              radiusMeters: radiusMeters, fixCount: fixCount)
    }
}

package enum StoredPath {
    /// Builds stored points into a path with the daemon's rules for distance, keeping every point (the
    /// store holds only points the track accepted when they were fixes).
    package static func track(_ points: [StoredTrackPoint], configuration: TrackBuilder.Configuration) -> TrackBuilder {
        var configuration = configuration
        configuration.maximumEphMeters = .infinity
        configuration.maximumPoints = max(configuration.maximumPoints, points.count)
        var builder = TrackBuilder(configuration: configuration)
        for point in points { builder.add(point.fix) }
        return builder
    }
}
