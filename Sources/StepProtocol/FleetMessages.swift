import Foundation

/// The MQTT link's part of STATUS (present only when `--mqtt-url` is given).
public struct MQTTStatusMessage: Codable, Sendable, Equatable {
    /// "connecting" (not yet connected since start), "connected", or "disconnected" (then `error` says why;
    /// the daemon keeps trying and the outbox keeps what is not yet acknowledged).
    public var state: String
    public var error: String?
    public var broker: String
    public var device_id: String
    public var topic_prefix: String
    /// Minute bins and visits in the outbox: stored, not yet acknowledged by the broker (PUBACK).
    public var queued: Int
    /// When the broker last acknowledged an outbox message.
    public var last_ack: String?

    public init(state: String, error: String?, broker: String, device_id: String, topic_prefix: String, queued: Int,
                last_ack: String?) {
        self.state = state
        self.error = error
        self.broker = broker
        self.device_id = device_id
        self.topic_prefix = topic_prefix
        self.queued = queued
        self.last_ack = last_ack
    }
}

/// `<prefix>/minute`: one finished minute bin, as history's minute bins (UTC). `key` (device and minute start)
/// is the same each time the minute is sent again, so a subscriber drops a duplicate by it.
public struct MinuteRecordMessage: Codable, Sendable, Equatable {
    public var key: String
    public var device: String
    public var start: String
    public var end: String
    public var steps: Int
    public var distance_m: Double
    /// Absent when no floor source reported in the minute.
    public var floors: Int?
    /// `true` for a minute not yet finished, sent as it stood at a clean stop; the finished minute, sent after the
    /// next start under the same key, replaces it. Absent from a finished minute.
    public var partial: Bool?

    public init(key: String, device: String, start: String, end: String, steps: Int, distance_m: Double, floors: Int?,
                partial: Bool? = nil) {
        self.key = key
        self.device = device
        self.start = start
        self.end = end
        self.steps = steps
        self.distance_m = distance_m
        self.floors = floors
        self.partial = partial
    }
}

/// `<prefix>/visit`: a visit's arrival (`departure` null) or departure, with VISIT's fields. `key` is the device,
/// the arrival and the event.
public struct VisitRecordMessage: Codable, Sendable, Equatable {
    public var key: String
    public var device: String
    /// "arrival" or "departure".
    public var event: String
    public var arrival: String
    public var departure: String?
    public var lat: Double
    public var lon: Double
    public var radius_m: Double
    public var duration_s: Double?
    public var fixes: Int

    public init(key: String, device: String, event: String, visit: VisitMessage) {
        self.key = key
        self.device = device
        self.event = event
        arrival = visit.arrival
        departure = visit.departure
        lat = visit.lat
        lon = visit.lon
        radius_m = visit.radius_m
        duration_s = visit.duration_s
        fixes = visit.fixes
    }

    enum CodingKeys: String, CodingKey { case key, device, event, arrival, departure, lat, lon, radius_m, duration_s, fixes }
    // `departure` always present, null on arrival, as in VISIT.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(key, forKey: .key)
        try c.encode(device, forKey: .device)
        try c.encode(event, forKey: .event)
        try c.encode(arrival, forKey: .arrival)
        try c.encode(departure, forKey: .departure)
        try c.encode(lat, forKey: .lat)
        try c.encode(lon, forKey: .lon)
        try c.encode(radius_m, forKey: .radius_m)
        try c.encodeIfPresent(duration_s, forKey: .duration_s)
        try c.encode(fixes, forKey: .fixes)
    }
}
