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
        var builder = TrackBuilder(configuration: storedConfiguration(configuration, keeping: points.count))
        for point in points { builder.add(point.fix) }
        return builder
    }

    /// The track's rules for stored points: every point kept (its eph passed when it was a fix).
    private static func storedConfiguration(_ configuration: TrackBuilder.Configuration,
                                            keeping count: Int) -> TrackBuilder.Configuration {
        var configuration = configuration
        configuration.maximumEphMeters = .infinity
        configuration.maximumPoints = max(1, count)
        return configuration
    }

    /// The path's points made from one page of stored points, as `track` makes them.
    static func points(_ page: [StoredTrackPoint], configuration: TrackBuilder.Configuration) -> [TrackPoint] {
        track(page, configuration: configuration).points
    }

    /// Counts a stored path as `track` builds it, keeping no more than a point or two.
    struct Summary {
        private var builder: TrackBuilder
        private(set) var stored = StoredTrackSummary()

        init(configuration: TrackBuilder.Configuration) {
            builder = TrackBuilder(configuration: StoredPath.storedConfiguration(configuration, keeping: 1))
        }

        mutating func add(_ point: StoredTrackPoint) {
            guard builder.add(point.fix) else { return }
            stored.points += 1
            if stored.start == nil { stored.start = point.time }
            stored.end = point.time
            stored.distanceMeters = builder.distanceMeters
        }
    }
}

/// What a stored range's track export holds, counted before it is written.
package struct StoredTrackSummary: Sendable {
    package var points = 0
    package var start: Date?
    package var end: Date?
    package var distanceMeters = 0.0

    package init(points: Int = 0, start: Date? = nil, end: Date? = nil, distanceMeters: Double = 0) {
        self.points = points
        self.start = start
        self.end = end
        self.distanceMeters = distanceMeters
    }
}

/// Where a page of stored track points ended: the next page starts after it.
struct TrackPageKey: Sendable, Equatable {
    var time: Double
    var rowID: Int64
}

/// A stored range's points for a TrackDocumentWriter, read from the store a page at a time as the document is
/// written: a client's export holds one page, never the day. Used from one queue at a time (TrackReply's).
package struct StoredTrackPages: TrackPointSource {
    /// Points per page: a few kilobytes held, a millisecond's read.
    static let pageRows = 512

    /// The range changed while its document was written (points pruned or the file replaced): the document
    /// cannot be finished as announced.
    struct RangeChanged: Error, CustomStringConvertible {
        var description: String { "the saved track changed while it was being sent" }
    }

    let store: StepStore
    let from: Date
    let to: Date
    package let count: Int
    let configuration: TrackBuilder.Configuration
    private var page: [TrackPoint] = []
    /// The index of `page[0]` in the document's points.
    private var pageStart = 0
    /// Where the stored rows of `page` ended; nil before the first page.
    private var pageEnd: TrackPageKey?

    package init(store: StepStore, from: Date, to: Date, summary: StoredTrackSummary, configuration: TrackBuilder.Configuration) {
        self.store = store
        self.from = from
        self.to = to
        self.count = summary.points
        self.configuration = configuration
    }

    package mutating func point(at index: Int) throws -> TrackPoint {
        guard index < count else { throw RangeChanged() }
        if index < pageStart {  // a second pass (GeoJSON's times): from the start again
            (page, pageStart, pageEnd) = ([], 0, nil)
        }
        while index >= pageStart + page.count {
            let next = pageStart + page.count
            let read = try store.trackPage(from: from, to: to, after: pageEnd, limit: Self.pageRows)
            guard let last = read.last else { throw RangeChanged() }
            (page, pageStart, pageEnd) = (StoredPath.points(read.points, configuration: configuration), next, last)
        }
        return page[index - pageStart]
    }
}
