import Foundation

/// The protocol's version: a client may rely on every field of its major version; minor adds fields.
public enum ProtocolVersion {
    public static let major = 1
    public static let minor = 2
}

/// Messages the daemon sends. Each carries its `class` first, as gpsd's JSON does, then its fields in the order
/// declared here, which is docs/protocol.md's (Wire.line keeps it).
public struct VersionMessage: Codable, Sendable {
    public static let messageClass = "VERSION"
    public var `class` = Self.messageClass
    public var release: String
    public var proto_major = ProtocolVersion.major
    public var proto_minor = ProtocolVersion.minor
    public init(release: String) { self.release = release }
}

/// What the daemon could not serve: `code` (ErrorCode) for a program to act on, `message` for a person.
public struct ErrorMessage: Codable, Sendable {
    public static let messageClass = "ERROR"
    public var `class` = Self.messageClass
    /// An ErrorCode's raw value; a string, so that a client reads a code added after it was built (and a daemon
    /// older than protocol 1.1, which sent none, as "").
    public var code: String
    public var message: String
    public var id: JSONValue?

    public init(code: ErrorCode, message: String, id: JSONValue? = nil) {
        self.code = code.rawValue
        self.message = message
        self.id = id
    }

    /// The ERROR for `error`, with its code and its sentence.
    public init(_ error: some CodedError, id: JSONValue? = nil) {
        self.init(code: error.code, message: error.description, id: id)
    }

    /// The ERROR for any failure of a request: a CodedError's code, else `internal`.
    public init(failure error: any Error, id: JSONValue? = nil) {
        let code = (error as? any CodedError)?.code ?? .internal
        self.init(code: code, message: "\(error)", id: id)
    }

    /// The code when this client knows it.
    public var errorCode: ErrorCode? { ErrorCode(rawValue: code) }

    private enum CodingKeys: String, CodingKey { case `class`, code, message, id }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        `class` = try container.decode(String.self, forKey: .class)
        code = try container.decodeIfPresent(String.self, forKey: .code) ?? ""
        message = try container.decode(String.self, forKey: .message)
        id = try container.decodeIfPresent(JSONValue.self, forKey: .id)
    }
}

public struct SourceStatus: Codable, Sendable, Equatable {
    public var kind: String
    public var description: String
    public var state: String
    public var error: String?
    /// Samples dropped as impossible (non-finite, beyond 50 g, an IIO chip's rail) before any filter.
    public var samples_rejected: Int
    /// Samples the device took that never reached the daemon: an IIO buffer that overran while the reader was
    /// held up, told from the gaps in the device's time stamps; and when the last such loss began.
    public var samples_lost: Int
    public var samples_lost_at: String?
    /// True while the bundled demo recording plays (`--demo`): its history is thrown away at exit.
    public var demo: Bool
    public init(kind: String, description: String, state: String, error: String?, samples_rejected: Int = 0,
                samples_lost: Int = 0, samples_lost_at: String? = nil, demo: Bool = false) {
        self.kind = kind
        self.description = description
        self.state = state
        self.error = error
        self.samples_rejected = samples_rejected
        self.samples_lost = samples_lost
        self.samples_lost_at = samples_lost_at
        self.demo = demo
    }
}

/// STATUS's `steps`: who counts now (`detector`, or `sensor`: the accelerometer's own counter while capture is
/// off) and the sensor-counter mode (`off`, `on`, `no counter`: asked for, but the device has none).
public struct StepCountingStatus: Codable, Sendable, Equatable {
    public var counting: String
    public var sensor_counter: String
    public init(counting: String, sensor_counter: String) {
        self.counting = counting
        self.sensor_counter = sensor_counter
    }
}

/// STATUS's `barometer`: the pressure sensor floors are counted from (docs/barometer.md).
public struct BarometerStatus: Codable, Sendable, Equatable {
    /// `iio`, `replay` (the pressure file beside a recording), `none` (disabled, or a replay without one).
    public var kind: String
    public var description: String
    /// As the accelerometer's: `starting`, `running`, `waiting`, `busy`, `disconnected`, `unavailable`, `finished`.
    public var state: String
    public var error: String?
    /// Readings a second: the polling rate, or a pressure file's own.
    public var rate_hz: Double?
    /// The last reading (kPa, as IIO's in_pressure_input).
    public var pressure_kpa: Double?
    public init(kind: String, description: String, state: String, error: String?, rate_hz: Double?, pressure_kpa: Double?) {
        self.kind = kind
        self.description = description
        self.state = state
        self.error = error
        self.rate_hz = rate_hz
        self.pressure_kpa = pressure_kpa
    }
}

public struct StatusMessage: Codable, Sendable {
    public static let messageClass = "STATUS"
    public var `class` = Self.messageClass
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
    /// Watchers closed because they did not read what they asked for.
    public var dropped_watchers: Int
    /// Clients closed because they sent more requests than they read answers to.
    public var closed_clients: Int?
    /// The gravity estimate in the board's axes (m/s^2), once samples have arrived.
    public var gravity: [Double]?
    /// The history database; absent when the daemon runs without one.
    public var store: StoreStatusMessage?
    /// The link to gpsd and the fix (LocationMessages.swift).
    public var gps: GPSStatus?
    /// The link to the MQTT broker and the outbox (FleetMessages.swift); absent without `--mqtt-url`.
    public var mqtt: MQTTStatusMessage?
    /// The barometer, and the height (m) it measured since the first reading or the last reset
    /// (CMAltimeter's relativeAltitude); absent before a reading.
    public var barometer: BarometerStatus?
    public var relative_altitude_m: Double?
    /// Who counts the steps: the detector, or the sensor's own counter (`--sensor-step-counter`).
    public var steps: StepCountingStatus?
    /// The daemon's time zone, which its days and "today" follow: an IANA name ("Europe/Berlin") and the
    /// offset from UTC now, in seconds east, for a client that does not know the name.
    public var time_zone: String?
    public var utc_offset_s: Int?
    public var id: JSONValue?
    public init(release: String, uptime_s: Double, source: SourceStatus, detector: String, rate_in_hz: Double,
                rate_out_hz: Double, samples_in: Int, samples_out: Int, clients: Int, dropped_watchers: Int,
                gravity: [Double]?, gps: GPSStatus? = nil, id: JSONValue? = nil) {
        self.gps = gps
        self.dropped_watchers = dropped_watchers
        self.gravity = gravity
        self.release = release
        self.uptime_s = uptime_s
        self.source = source
        self.detector = detector
        self.rate_in_hz = rate_in_hz
        self.rate_out_hz = rate_out_hz
        self.samples_in = samples_in
        self.samples_out = samples_out
        self.clients = clients
        self.id = id
    }
}

public struct StepsMessage: Codable, Sendable, Equatable {
    public static let messageClass = "STEPS"
    public var `class` = Self.messageClass
    public var steps: Int
    /// When counting started: the daemon's first start, or the last reset (ISO-8601).
    public var since: String
    /// CMPedometerData's fields: the period covered, and the pace.
    public var start: String
    public var end: String
    public var cadence_spm: Double
    public var current_cadence_spm: Double
    public var current_pace_s_per_m: Double?
    public var average_active_pace_s_per_m: Double?
    public var distance_m: Double
    public var stride_m: Double
    public var stride_calibrated: Bool
    public var activity: String
    public var detector: String
    /// Present only when a barometer is present.
    public var floors_ascended: Int?
    public var floors_descended: Int?
    /// The sensor's own step counter, when the device has one (IIO `in_steps_input`).
    public var hardware_steps: Int?
    /// What was walked since local midnight, whatever the reset; absent from an older daemon.
    public var today: TodayMessage?
    public var id: JSONValue?

    public init(steps: Int, since: String, cadence_spm: Double, distance_m: Double, detector: String, start: String,
                end: String, current_pace_s_per_m: Double?, average_active_pace_s_per_m: Double?, stride_m: Double,
                stride_calibrated: Bool, activity: String, floors_ascended: Int?, floors_descended: Int?,
                hardware_steps: Int? = nil, id: JSONValue? = nil) {
        self.steps = steps
        self.since = since
        self.cadence_spm = cadence_spm
        self.distance_m = distance_m
        self.detector = detector
        self.start = start
        self.end = end
        self.current_cadence_spm = cadence_spm
        self.current_pace_s_per_m = current_pace_s_per_m
        self.average_active_pace_s_per_m = average_active_pace_s_per_m
        self.stride_m = stride_m
        self.stride_calibrated = stride_calibrated
        self.activity = activity
        self.floors_ascended = floors_ascended
        self.floors_descended = floors_descended
        self.hardware_steps = hardware_steps
        self.id = id
    }
}

/// STEPS' and PEDOMETER's `today`: the figures since local midnight in the daemon's time zone (the one STATUS
/// names), as a phone shows them. They start again from zero at midnight, kept across restarts.
public struct TodayMessage: Codable, Sendable, Equatable {
    /// Local midnight, with the zone's offset ("2026-11-26T00:00:00+01:00").
    public var since: String
    public var steps: Int
    public var distance_m: Double
    /// Present only when a barometer is present, as the counts since the reset.
    public var floors_ascended: Int?
    public var floors_descended: Int?
    /// Minutes of today with 30 steps or more.
    public var active_min: Int
    public init(since: String, steps: Int, distance_m: Double, floors_ascended: Int?, floors_descended: Int?, active_min: Int) {
        self.since = since
        self.steps = steps
        self.distance_m = distance_m
        self.floors_ascended = floors_ascended
        self.floors_descended = floors_descended
        self.active_min = active_min
    }
}

public struct StepMessage: Codable, Sendable, Equatable {
    public static let messageClass = "STEP"
    public var `class` = Self.messageClass
    public var steps: Int
    public var time: String
    public init(steps: Int, time: String) {
        self.steps = steps
        self.time = time
    }
}

/// CMPedometerEvent: walking resumed or paused.
public struct ActivityMessage: Codable, Sendable, Equatable {
    public static let messageClass = "ACTIVITY"
    public var `class` = Self.messageClass
    public var state: String
    public var time: String
    public init(state: String, time: String) {
        self.state = state
        self.time = time
    }
}

/// The seismometer's live signal.
public struct MotionMessage: Codable, Sendable, Equatable {
    public static let messageClass = "MOTION"
    public var `class` = Self.messageClass
    public var time: String
    public var pitch_deg: Double
    public var roll_deg: Double
    public var vertical_accel: Double
    public var vibration_rms: Double
    public init(time: String, pitch_deg: Double, roll_deg: Double, vertical_accel: Double, vibration_rms: Double) {
        self.time = time
        self.pitch_deg = pitch_deg
        self.roll_deg = roll_deg
        self.vertical_accel = vertical_accel
        self.vibration_rms = vibration_rms
    }
}

/// A walking bout that has ended, with its gait measures (docs/protocol.md, docs/gait.md). A measure that is
/// not given (too few strides, or step length and speed away from the waist) is left out.
public struct BoutMessage: Codable, Sendable, Equatable {
    public static let messageClass = "BOUT"
    public var `class` = Self.messageClass
    public var start: String
    public var end: String
    public var steps: Int
    public var duration_s: Double
    public var cadence_spm: Double
    public var stride_time_s: Double?
    public var stride_time_cv: Double?
    public var regularity: Double?
    public var symmetry: Double?
    public var step_length_m: Double?
    public var speed_mps: Double?
    public var placement: String

    public init(start: String, end: String, steps: Int, duration_s: Double, cadence_spm: Double, stride_time_s: Double?,
                stride_time_cv: Double?, regularity: Double?, symmetry: Double?, step_length_m: Double?, speed_mps: Double?,
                placement: String) {
        self.start = start
        self.end = end
        self.steps = steps
        self.duration_s = duration_s
        self.cadence_spm = cadence_spm
        self.stride_time_s = stride_time_s
        self.stride_time_cv = stride_time_cv
        self.regularity = regularity
        self.symmetry = symmetry
        self.step_length_m = step_length_m
        self.speed_mps = speed_mps
        self.placement = placement
    }
}

public struct WatchMessage: Codable, Sendable {
    public static let messageClass = "WATCH"
    public var `class` = Self.messageClass
    public var enable: Bool
    public var classes: [String]
    /// The MOTION rate granted, when MOTION is watched.
    public var rate_hz: Double?
    public var id: JSONValue?
    public init(enable: Bool, classes: [String], rate_hz: Double?, id: JSONValue? = nil) {
        self.enable = enable
        self.classes = classes
        self.rate_hz = rate_hz
        self.id = id
    }
}

/// The classes a client can watch.
public enum WatchClass: String, CaseIterable, Sendable {
    case step = "STEP"
    case position = "POSITION"
    case visit = "VISIT"
    case pedometer = "PEDOMETER"
    case activity = "ACTIVITY"
    case motion = "MOTION"
    case bout = "BOUT"

    /// What a `watch` without `classes` gets: everything but MOTION, whose 10-60 lines a second a client
    /// should ask for by name.
    public static let defaultClasses: Set<WatchClass> = Set(allCases).subtracting([.motion])
}

/// Encodes a message as one protocol line (JSON without pretty printing, then a newline), its keys in
/// declaration order: `class` first, then the fields as docs/protocol.md lists them (OrderedJSONEncoder).
public enum Wire {
    public static func line<T: Encodable>(_ message: T) -> Data {
        // A non-finite number (a sensor gone mad) is written as null by the encoder rather than failing.
        var data = (try? OrderedJSONEncoder.encode(message)) ?? Data("{\"class\":\"ERROR\",\"code\":\"internal\",\"message\":\"encoding failed\"}".utf8)
        data.append(0x0A)
        return data
    }
}
