import Foundation

/// What the receiver says about its solution, as gpsd's TPV `mode`.
public enum FixMode: String, Sendable, Equatable, Codable {
    case noFix = "no_fix"
    case twoD = "2d"
    case threeD = "3d"

    /// gpsd's MODE_* numbers: 0 not seen, 1 no fix, 2 2D, 3 3D.
    public init(gpsdMode: Int) {
        switch gpsdMode {
        case 2: self = .twoD
        case 3: self = .threeD
        default: self = .noFix
        }
    }
}

/// How much to trust a position, from its horizontal error. The seed labels a location "high" accuracy
/// under 15 m; the other bounds follow the same spirit (a street, a neighbourhood).
public enum AccuracyClass: String, Sendable, Equatable, Codable {
    case high, medium, low, unknown

    public init(ephMeters: Double?) {
        guard let eph = ephMeters, eph.isFinite else { self = .unknown; return }
        if eph < 15 { self = .high } else if eph < 50 { self = .medium } else { self = .low }
    }
}

/// One position report from the receiver (a gpsd TPV), as a plain value. Optional fields are those gpsd
/// may leave out; `time` is the receiver's fix time, `arrival` the local wall clock when it reached us.
public struct Fix: Sendable, Equatable {
    public var time: Date?
    public var mode: FixMode
    public var latitudeDegrees: Double
    public var longitudeDegrees: Double
    public var altitudeMSLMeters: Double?
    public var altitudeHAEMeters: Double?
    public var ephMeters: Double?
    public var epvMeters: Double?
    public var speedMetersPerSecond: Double?
    public var trackDegrees: Double?
    public var climbMetersPerSecond: Double?
    public var satellitesUsed: Int
    public var arrival: Date

    public init(time: Date?, mode: FixMode, latitudeDegrees: Double, longitudeDegrees: Double,
                altitudeMSLMeters: Double? = nil, altitudeHAEMeters: Double? = nil,
                ephMeters: Double? = nil, epvMeters: Double? = nil, speedMetersPerSecond: Double? = nil,
                trackDegrees: Double? = nil, climbMetersPerSecond: Double? = nil, satellitesUsed: Int = 0,
                arrival: Date) {
        self.time = time
        self.mode = mode
        self.latitudeDegrees = latitudeDegrees
        self.longitudeDegrees = longitudeDegrees
        self.altitudeMSLMeters = altitudeMSLMeters
        self.altitudeHAEMeters = altitudeHAEMeters
        self.ephMeters = ephMeters
        self.epvMeters = epvMeters
        self.speedMetersPerSecond = speedMetersPerSecond
        self.trackDegrees = trackDegrees
        self.climbMetersPerSecond = climbMetersPerSecond
        self.satellitesUsed = satellitesUsed
        self.arrival = arrival
    }

    /// True when the report carries a usable horizontal position.
    public var hasPosition: Bool {
        mode != .noFix && latitudeDegrees.isFinite && longitudeDegrees.isFinite
            && abs(latitudeDegrees) <= 90 && abs(longitudeDegrees) <= 180
    }

    public var coordinate: Coordinate { Coordinate(latitudeDegrees: latitudeDegrees, longitudeDegrees: longitudeDegrees) }

    public var accuracy: AccuracyClass { AccuracyClass(ephMeters: ephMeters) }
}
