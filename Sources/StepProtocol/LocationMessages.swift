import Foundation

/// The last accepted fix, or only `mode: "no_fix"` before the first one. Fields follow gpsd's TPV with
/// units in their names; `age_s` is how long ago the fix reached the daemon.
public struct PositionMessage: Codable, Sendable, Equatable {
    public static let messageClass = "POSITION"
    public var `class` = Self.messageClass
    public var time: String?
    public var lat: Double?
    public var lon: Double?
    public var alt_msl_m: Double?
    public var alt_hae_m: Double?
    public var eph_m: Double?
    public var epv_m: Double?
    public var speed_mps: Double?
    public var track_deg: Double?
    public var climb_mps: Double?
    /// `no_fix`, `2d` or `3d`.
    public var mode: String
    public var satellites_used: Int?
    public var age_s: Double?
    /// `high` (eph under 15 m), `medium` (under 50 m), `low`, or `unknown`.
    public var accuracy: String?
    /// Only while gpsd is gone (lost, unreachable, not gpsd): since when, and why; the fields above are then the
    /// last fix, if there was one.
    public var unavailable_since: String?
    public var error: String?
    public var id: JSONValue?

    public init(time: String? = nil, lat: Double? = nil, lon: Double? = nil, alt_msl_m: Double? = nil,
                alt_hae_m: Double? = nil, eph_m: Double? = nil, epv_m: Double? = nil, speed_mps: Double? = nil,
                track_deg: Double? = nil, climb_mps: Double? = nil, mode: String, satellites_used: Int? = nil,
                age_s: Double? = nil, accuracy: String? = nil, id: JSONValue? = nil) {
        self.time = time
        self.lat = lat
        self.lon = lon
        self.alt_msl_m = alt_msl_m
        self.alt_hae_m = alt_hae_m
        self.eph_m = eph_m
        self.epv_m = epv_m
        self.speed_mps = speed_mps
        self.track_deg = track_deg
        self.climb_mps = climb_mps
        self.mode = mode
        self.satellites_used = satellites_used
        self.age_s = age_s
        self.accuracy = accuracy
        self.id = id
    }
}

/// The GPS part of STATUS: `state` is `unavailable` (gpsd not reachable, or GPS off), `no_fix` (gpsd connected,
/// no current fix), `fix`, or `stale` (gpsd connected, but no new fix for 10 s: the receiver went quiet).
public struct GPSStatus: Codable, Sendable, Equatable {
    public var state: String
    /// Why it is `unavailable`; in the other states, the last failure of the link, kept after recovery so
    /// that a flapping link can be diagnosed (absent when there was none).
    public var error: String?
    public var gpsd: String
    public var fixes_accepted: Int
    public var fixes_ignored: Int
    /// Reports refused as implausible: dated more than 5 s ahead of the daemon's clock, eph/epv absurd.
    public var fixes_rejected: Int
    public var connections: Int
    public var last_fix_age_s: Double?
    /// Why the track and visits saved by earlier runs could not be read at start (absent when they were).
    public var restore_error: String?
    /// Accepted fixes kept out of the path because their eph was over `track_max_eph_m` (also sent).
    public var fixes_over_max_eph: Int?
    public var track_max_eph_m: Double?
    public init(state: String, error: String?, gpsd: String, fixes_accepted: Int, fixes_ignored: Int,
                fixes_rejected: Int = 0, connections: Int, last_fix_age_s: Double?, restore_error: String? = nil,
                fixes_over_max_eph: Int? = nil, track_max_eph_m: Double? = nil) {
        self.restore_error = restore_error
        self.fixes_over_max_eph = fixes_over_max_eph
        self.track_max_eph_m = track_max_eph_m
        self.state = state
        self.error = error
        self.gpsd = gpsd
        self.fixes_accepted = fixes_accepted
        self.fixes_ignored = fixes_ignored
        self.fixes_rejected = fixes_rejected
        self.connections = connections
        self.last_fix_age_s = last_fix_age_s
    }
}

/// Track export formats for `{"cmd":"track","format":...}`.
public enum TrackFormat: String, CaseIterable, Sendable {
    case geojson, gpx
}

/// The path so far: its length (jitter not counted), its point count, and the document in `format`.
public struct TrackMessage: Codable, Sendable, Equatable {
    public static let messageClass = "TRACK"
    public var `class` = Self.messageClass
    public var format: String
    public var distance_m: Double
    public var points: Int
    public var start: String?
    public var end: String?
    /// The GeoJSON or GPX text.
    public var document: String
    public var id: JSONValue?
    public init(format: String, distance_m: Double, points: Int, start: String?, end: String?, document: String,
                id: JSONValue? = nil) {
        self.format = format
        self.distance_m = distance_m
        self.points = points
        self.start = start
        self.end = end
        self.document = document
        self.id = id
    }
}

/// A stay at one place. Sent when it begins (`departure` null) and when it ends.
public struct VisitMessage: Codable, Sendable, Equatable {
    public static let messageClass = "VISIT"
    public var `class` = Self.messageClass
    public var arrival: String
    public var departure: String?
    public var lat: Double
    public var lon: Double
    public var radius_m: Double
    public var duration_s: Double?
    public var fixes: Int

    public init(arrival: String, departure: String?, lat: Double, lon: Double, radius_m: Double,
                duration_s: Double?, fixes: Int) {
        self.arrival = arrival
        self.departure = departure
        self.lat = lat
        self.lon = lon
        self.radius_m = radius_m
        self.duration_s = duration_s
        self.fixes = fixes
    }

    // `departure` is always present, null while the stay goes on (as CLVisit's distantFuture, but JSON).
    enum CodingKeys: String, CodingKey { case `class`, arrival, departure, lat, lon, radius_m, duration_s, fixes }
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(self.class, forKey: .class)
        try c.encode(arrival, forKey: .arrival)
        try c.encode(departure, forKey: .departure)
        try c.encode(lat, forKey: .lat)
        try c.encode(lon, forKey: .lon)
        try c.encode(radius_m, forKey: .radius_m)
        try c.encodeIfPresent(duration_s, forKey: .duration_s)
        try c.encode(fixes, forKey: .fixes)
    }
}

/// Every visit kept, oldest first.
public struct VisitsMessage: Codable, Sendable, Equatable {
    public static let messageClass = "VISITS"
    public var `class` = Self.messageClass
    public var visits: [VisitMessage]
    public var id: JSONValue?
    public init(visits: [VisitMessage], id: JSONValue? = nil) {
        self.visits = visits
        self.id = id
    }
}
