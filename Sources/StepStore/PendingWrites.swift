import Foundation

/// A point of the GPS path as the store keeps it.
public struct StoredTrackPoint: Sendable, Equatable {
    public var time: Date
    public var latitudeDegrees: Double
    public var longitudeDegrees: Double
    public var altitudeMSLMeters: Double?
    public var ephMeters: Double?
    /// gpsd's fix mode: "2d" or "3d".
    public var mode: String
    public var satellitesUsed: Int

    public init(time: Date, latitudeDegrees: Double, longitudeDegrees: Double, altitudeMSLMeters: Double? = nil,
                ephMeters: Double? = nil, mode: String, satellitesUsed: Int = 0) {
        self.time = time
        self.latitudeDegrees = latitudeDegrees
        self.longitudeDegrees = longitudeDegrees
        self.altitudeMSLMeters = altitudeMSLMeters
        self.ephMeters = ephMeters
        self.mode = mode
        self.satellitesUsed = satellitesUsed
    }
}

/// A stay as the store keeps it; a stay that goes on has no departure yet and is written again when it ends
/// (the arrival identifies it).
public struct StoredVisit: Sendable, Equatable {
    public var arrival: Date
    public var departure: Date?
    public var latitudeDegrees: Double
    public var longitudeDegrees: Double
    public var radiusMeters: Double
    public var fixCount: Int

    public init(arrival: Date, departure: Date?, latitudeDegrees: Double, longitudeDegrees: Double,
                radiusMeters: Double, fixCount: Int) {
        self.arrival = arrival
        self.departure = departure
        self.latitudeDegrees = latitudeDegrees
        self.longitudeDegrees = longitudeDegrees
        self.radiusMeters = radiusMeters
        self.fixCount = fixCount
    }
}

/// What one minute gained since the last commit.
struct MinuteDelta: Equatable {
    var steps = 0
    var distanceMeters = 0.0
    var floors: Int?
}

/// Everything recorded since the last commit, committed as one transaction. When a commit fails it stays
/// here and grows, so nothing is lost while the database is away; the caps keep a long outage from eating
/// the board's memory (minute bins are small: a day of them is 1 440 entries).
struct PendingWrites {
    static let maximumTrackPoints = 86_400

    private(set) var minutes: [Int64: MinuteDelta] = [:]
    fileprivate(set) var counter: StepStore.Counter?
    private(set) var trackPoints: [StoredTrackPoint] = []
    private(set) var visits: [Date: StoredVisit] = [:]
    /// Bouts by their start; a few an hour.
    private(set) var bouts: [Date: StoredBout] = [:]
    private(set) var droppedTrackPoints = 0

    var isEmpty: Bool { minutes.isEmpty && counter == nil && trackPoints.isEmpty && visits.isEmpty && bouts.isEmpty }

    static func minute(of time: Date) -> Int64 {
        Int64((time.timeIntervalSince1970 / 60).rounded(.down))
    }

    mutating func addStep(at time: Date, distanceMeters: Double) {
        minutes[Self.minute(of: time), default: MinuteDelta()].steps += 1
        minutes[Self.minute(of: time), default: MinuteDelta()].distanceMeters += distanceMeters
    }

    mutating func addFloors(_ floors: Int, at time: Date) {
        let minute = Self.minute(of: time)
        minutes[minute, default: MinuteDelta()].floors = (minutes[minute]?.floors ?? 0) + floors
    }

    mutating func setCounter(_ counter: StepStore.Counter) {
        self.counter = counter
    }

    mutating func add(_ point: StoredTrackPoint) {
        if trackPoints.count >= Self.maximumTrackPoints {
            trackPoints.removeFirst()
            droppedTrackPoints += 1
        }
        trackPoints.append(point)
    }

    mutating func add(_ visit: StoredVisit) {
        visits[visit.arrival] = visit
    }

    mutating func add(_ bout: StoredBout) {
        bouts[bout.start] = bout
    }
}

extension PendingWrites {
    /// The batch without the counter: what may be written while the store does not yet know how this run's
    /// count relates to the one saved (a store that could not be opened at start).
    var withoutCounter: PendingWrites {
        var copy = self
        copy.counter = nil
        return copy
    }

    var summary: String {
        "\(minutes.values.reduce(0) { $0 + $1.steps }) steps over \(minutes.count) minutes, \(trackPoints.count) track points, "
            + "\(visits.count) visits, \(bouts.count) bouts"
            + (counter.map { ", counter \($0.steps)" + ($0.floors.map { " (floors +\($0.ascended)/-\($0.descended))" } ?? "") } ?? "")
    }
}
