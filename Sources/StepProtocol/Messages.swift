import Foundation

/// The protocol's version: a client may rely on every field of its major version; minor adds fields.
public enum ProtocolVersion {
    public static let major = 1
    public static let minor = 0
}

/// Messages the daemon sends. Each encodes with its `class` first, as gpsd's JSON does.
public struct VersionMessage: Codable, Sendable {
    public var `class` = "VERSION"
    public var release: String
    public var proto_major = ProtocolVersion.major
    public var proto_minor = ProtocolVersion.minor
    public init(release: String) { self.release = release }
}

public struct ErrorMessage: Codable, Sendable {
    public var `class` = "ERROR"
    public var message: String
    public var id: JSONValue?
    public init(message: String, id: JSONValue? = nil) {
        self.message = message
        self.id = id
    }
}

public struct SourceStatus: Codable, Sendable, Equatable {
    public var kind: String
    public var description: String
    public var state: String
    public var error: String?
    public init(kind: String, description: String, state: String, error: String?) {
        self.kind = kind
        self.description = description
        self.state = state
        self.error = error
    }
}

public struct StatusMessage: Codable, Sendable {
    public var `class` = "STATUS"
    public var release: String
    public var uptime_s: Double
    public var source: SourceStatus
    public var detector: String
    /// The rate samples arrive at from the source, measured over the last seconds.
    public var rate_in_hz: Double
    /// The uniform rate the pipeline runs at.
    public var rate_out_hz: Double
    public var samples_in: Int
    public var samples_out: Int
    public var clients: Int
    public var gps: GPSStatus?
    public var id: JSONValue?
    public init(release: String, uptime_s: Double, source: SourceStatus, detector: String, rate_in_hz: Double,
                rate_out_hz: Double, samples_in: Int, samples_out: Int, clients: Int, gps: GPSStatus? = nil,
                id: JSONValue? = nil) {
        self.release = release
        self.uptime_s = uptime_s
        self.source = source
        self.detector = detector
        self.rate_in_hz = rate_in_hz
        self.rate_out_hz = rate_out_hz
        self.samples_in = samples_in
        self.samples_out = samples_out
        self.clients = clients
        self.gps = gps
        self.id = id
    }
}

public struct StepsMessage: Codable, Sendable, Equatable {
    public var `class` = "STEPS"
    public var steps: Int
    /// When counting started: the daemon's first start, or the last reset (ISO-8601).
    public var since: String
    public var cadence_spm: Double
    public var distance_m: Double
    public var detector: String
    public var id: JSONValue?
    public init(steps: Int, since: String, cadence_spm: Double, distance_m: Double, detector: String, id: JSONValue? = nil) {
        self.steps = steps
        self.since = since
        self.cadence_spm = cadence_spm
        self.distance_m = distance_m
        self.detector = detector
        self.id = id
    }
}

public struct StepMessage: Codable, Sendable, Equatable {
    public var `class` = "STEP"
    public var steps: Int
    public var time: String
    public init(steps: Int, time: String) {
        self.steps = steps
        self.time = time
    }
}

public struct WatchMessage: Codable, Sendable {
    public var `class` = "WATCH"
    public var enable: Bool
    public var classes: [String]
    public var id: JSONValue?
    public init(enable: Bool, classes: [String], id: JSONValue? = nil) {
        self.enable = enable
        self.classes = classes
        self.id = id
    }
}

/// The classes a client can watch.
public enum WatchClass: String, CaseIterable, Sendable {
    case step = "STEP"
    case position = "POSITION"
    case visit = "VISIT"
}

/// ISO-8601 with milliseconds, in UTC, as in gpsd's TPV time.
public enum Timestamp {
    public static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = formatter.date(from: text) { return d }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// Encodes a message as one protocol line (JSON without pretty printing, then a newline).
public enum Wire {
    public static func line<T: Encodable>(_ message: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        var data = (try? encoder.encode(message)) ?? Data("{\"class\":\"ERROR\",\"message\":\"encoding failed\"}".utf8)
        data.append(0x0A)
        return data
    }
}
