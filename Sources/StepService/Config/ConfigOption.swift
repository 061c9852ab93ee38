import Foundation
import StepProcessing

/// One daemon option, declared once: its stepd.conf key, command-line flag (`--key-with-dashes`), kind and
/// allowed range, default and help. `stepd run`'s ArgumentParser flags are made from it (Sources/stepd,
/// OptionDeclarations.swift), stepd.conf is parsed with it, and docs/configuration.md's table,
/// docs/stepd.conf.example and stepd(8)'s OPTIONS are generated from it (`stepd options --update-docs`);
/// tests fail when any of them differs.
public struct ConfigOption: Sendable {
    public enum Kind: Sendable {
        /// A path or a name: any text without NUL, at most `maximumTextBytes`.
        case path
        /// The path of a Unix socket: a path that fits `sockaddr_un` (at most `maximumSocketPathBytes`).
        case socketPath
        case choice([String])
        case integer(ClosedRange<Int>)
        case number(ClosedRange<Double>)
        case flag
        /// HOST:PORT, IPv6 in brackets ([::1]:2947), as gpsd's clients write it.
        case address
        /// An IIO device as stepd matches it: its `name`, its `label` or its id `iio:deviceN`. Never a path
        /// (a sysfs or /dev path would match no device, and stepd would wait for it for ever), so no `/`.
        case deviceName

        /// PATH_MAX (4096) less its NUL: no path is longer, and no name, prefix or URL stepd takes needs more.
        /// A longer value (a megabyte pasted by mistake) is refused rather than carried into every message.
        public static let maximumTextBytes = 4095
        /// sun_path holds 108 bytes with its NUL: a longer socket path cannot be bound or connected to.
        public static let maximumSocketPathBytes = 107

        /// The longest value this kind takes, in UTF-8 bytes; nil for kinds whose values are short by nature.
        public var maximumBytes: Int? {
            switch self {
            case .path, .deviceName, .address: return Self.maximumTextBytes
            case .socketPath: return Self.maximumSocketPathBytes
            case .choice, .integer, .number, .flag: return nil
            }
        }

        /// The typed value of `text`, or nil when it is not of this kind or out of range.
        public func parse(_ text: String) -> ConfigValue? {
            if let limit = maximumBytes, text.utf8.count > limit { return nil }
            switch self {
            case .path, .socketPath:
                return text.isEmpty || text.contains("\0") ? nil : .string(text)
            case .choice(let choices):
                return choices.contains(text) ? .string(text) : nil
            case .integer(let range):
                guard let n = Int(text), range.contains(n) else { return nil }
                return .integer(n)
            case .number(let range):
                guard let n = Double(text), n.isFinite, range.contains(n) else { return nil }
                return .number(n)
            case .flag:
                switch text.lowercased() {
                case "true", "yes", "on", "1": return .flag(true)
                case "false", "no", "off", "0": return .flag(false)
                default: return nil
                }
            case .address:
                return (try? GPSDAddress(parsing: text)) == nil ? nil : .string(text)
            case .deviceName:
                return text.isEmpty || text.contains(where: { $0 == "\0" || $0 == "/" || $0.isNewline }) ? nil : .string(text)
            }
        }

        /// What a value must be, for error messages and the documentation: "a number from 0.5 to 2.5".
        public var expectation: String {
            switch self {
            case .path: return "a path"
            case .socketPath: return "a path of at most \(Self.maximumSocketPathBytes) bytes (a Unix socket's limit)"
            case .choice(let choices): return "one of " + choices.joined(separator: ", ")
            case .integer(let r): return "a whole number from \(r.lowerBound) to \(r.upperBound)"
            case .number(let r): return "a number from \(Self.format(r.lowerBound)) to \(Self.format(r.upperBound))"
            case .flag: return "true or false"
            case .address: return "HOST:PORT"
            case .deviceName: return "an IIO device's name, label or iio:deviceN (not a path)"
            }
        }

        /// What `text` should have been: `expectation`, or the length limit when that is what it breaks.
        public func expectation(for text: String) -> String {
            if let limit = maximumBytes, text.utf8.count > limit { return "at most \(limit) bytes (\(expectation))" }
            if case .address = self {
                do { _ = try GPSDAddress(parsing: text) } catch let error as GPSDAddressError {
                    return "\(expectation) (\(error.reason))"
                } catch {}
            }
            return expectation
        }

        public static func format(_ x: Double) -> String {
            x.rounded() == x ? String(Int(x)) : String(x)
        }
    }

    public let key: String
    public let kind: Kind
    /// The default as the documentation writes it; in parentheses when there is no fixed value
    /// ("(none)", "(the first accelerometer)").
    public let defaultText: String
    /// One line: `stepd --help`, the stepd.conf.example comment, the start of the documentation's entry.
    public let help: String
    /// What the value is called in `--help` and the man page (`--height <m>`).
    public let valueName: String
    /// More for docs/configuration.md and stepd(8), after `help`.
    public let details: String?
    /// A value for stepd.conf.example when the default is not one.
    public let example: String?

    public init(key: String, kind: Kind, defaultText: String, help: String, valueName: String? = nil,
                details: String? = nil, example: String? = nil) {
        self.key = key
        self.kind = kind
        self.defaultText = defaultText
        self.help = help
        self.valueName = valueName ?? key.split(separator: "_").last.map(String.init) ?? key
        self.details = details
        self.example = example
    }

    /// The command-line spelling: state_dir → state-dir (used as `--state-dir`).
    public var flagName: String { key.replacingOccurrences(of: "_", with: "-") }

    /// The typed default, or nil when the default is computed at run time or absent ("(none)").
    public var defaultValue: ConfigValue? {
        defaultText.hasPrefix("(") ? nil : kind.parse(defaultText)
    }

    /// Parses a command-line or stepd.conf value with this option's kind and range.
    public func value(_ text: String) throws -> ConfigValue {
        guard let value = kind.parse(text) else { throw OptionValueError(option: self, text: text) }
        return value
    }
}

/// A value outside an option's kind or range, in the words stepd.conf errors use.
public struct OptionValueError: Error, CustomStringConvertible {
    public let option: ConfigOption
    public let text: String
    public var description: String { "expected \(option.kind.expectation(for: text)), found \(ConfigError.quoted(text))" }
}

extension ConfigOption {
    public static let defaultPath = "/etc/stepd/stepd.conf"
    public static let defaultStateDirectory = "/var/lib/stepd"
    public static let defaultRetentionDays = 400
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Looks an option up by key, among those of the file and those only on the command line.
    public static func named(_ key: String) -> ConfigOption {
        guard let option = (all + commandLineOnly).first(where: { $0.key == key }) else {
            preconditionFailure("no option \"\(key)\" is declared in ConfigOption.all")
        }
        return option
    }

    /// Every daemon option, in the order the documentation lists them. Each is a stepd.conf key and the
    /// command-line flag `--key-with-dashes`, which wins over the file. Add an option here, then read it
    /// in `stepd run` with `@Option(.named("key")) var key: Type` (see docs/configuration.md, "Adding an option").
    public static let all: [ConfigOption] = [
        ConfigOption(key: "socket", kind: .socketPath, defaultText: "/run/stepd/stepd.sock",
                     help: "The Unix socket to listen on.", valueName: "path",
                     details: "Under socket activation (`stepd.socket`) the unit's `ListenStream=` decides and this is ignored. Run by hand without root, stepd falls back to `$XDG_RUNTIME_DIR/stepd/stepd.sock`, then `/tmp/stepd-UID/stepd.sock`, each only while its folder is the user's own, as ssh-agent and tmux want theirs (a directory made mode 0700, owned by the user; `$XDG_RUNTIME_DIR` too): one another user made or can write is refused with the reason in the log, and stepctl does not use a socket in it. A socket nobody listens on (left by a daemon that was killed) is replaced; anything else at the path (a regular file, a directory, a link, a live socket) is left untouched and stepd exits with a message (status 73, 75 for a live socket)."),
        ConfigOption(key: "state_dir", kind: .path, defaultText: defaultStateDirectory,
                     help: "Where the history database stepd.sqlite lives.", valueName: "dir",
                     details: "Under systemd, `StateDirectory=stepd` sets `$STATE_DIRECTORY`, used when this is not given. Run by hand without write access to `/var/lib`, stepd uses `$XDG_STATE_HOME/stepd` or `~/.local/state/stepd`."),
        ConfigOption(key: "retention_days", kind: .integer(1...36_500), defaultText: String(defaultRetentionDays),
                     help: "Prune history older than this many days.", valueName: "days",
                     details: "Minute bins, track points and visits are pruned at start and every hour; the journal says what each pruning removed (`store: removed 3600 track points older than 400 days ...`)."),
        ConfigOption(key: "detector", kind: .choice(StepDetectorKind.allCases.map(\.rawValue)),
                     defaultText: StepDetectorKind.default.rawValue, help: "The step detector.", valueName: "name"),
        ConfigOption(key: "height", kind: .number(0.5...2.5), defaultText: "1.70",
                     help: "The walker's height in metres, for the stride length until GPS calibrates it.", valueName: "m",
                     details: "The stride is 0.414 × height."),
        ConfigOption(key: "placement", kind: .choice(Placement.allCases.map(\.rawValue)),
                     defaultText: Placement.default.rawValue,
                     help: "Where the device is carried, for the walking gate and the gait measures of each walking bout.", valueName: "where",
                     details: "pocket, bag and waist judge a walk on the vertical share of the device's motion alone (a device there is not in a hand at work, so its turning with the thigh or the bag does not close the walking gate); auto, wrist and hand also judge how the device turns, which keeps a hand's brushing, combing or pouring from counting. waist (the lower back or a belt) gives step length and walking speed from the body's vertical motion; every other placement, and auto, gives the bout's stride time, its variability, regularity and symmetry only. See [gait.md](gait.md)."),
        ConfigOption(key: "device", kind: .deviceName, defaultText: "(the first accelerometer)",
                     help: "The IIO accelerometer to read: its name, label or iio:deviceN.", valueName: "name",
                     details: "See [iio.md](iio.md).", example: "bmi160"),
        ConfigOption(key: "iio_uri", kind: .path, defaultText: "local:",
                     help: "The libiio context: local: or ip:HOST for a board running iiod.", valueName: "uri"),
        ConfigOption(key: "sensor_step_counter", kind: .flag, defaultText: "false",
                     help: "Let the accelerometer's own step counter (IIO in_steps_input) count while still or walking steadily, capture off, to save wake-ups.",
                     details: "Capture comes back for MOTION watchers, at the start of a walk (for its first steps and cadence) and until the detector and the counter agree; STATUS's `steps.counting` says which counts. The sensor's counter is less careful than stepd's detector (no walking gate), and steps reach watchers every 2 s. A device without a counter, or read without a buffer, is read as without this flag (STATUS: `no counter`). See [iio.md](iio.md#the-sensors-own-step-counter)."),
        ConfigOption(key: "barometer", kind: .deviceName, defaultText: "(the first barometer)",
                     help: "The IIO pressure sensor floors are counted from: its name, label or iio:deviceN.", valueName: "name",
                     details: "Read through the same libiio context as the accelerometer, once per refill of its buffer (at most 4 times a second), and on its own 4 times a second only while no accelerometer refills one. With none present, stepd waits for one and counts no floors meanwhile. Refused together with `no_barometer`. A replay (`replay`, `demo`) reads the pressure file beside its recording instead, and says at start that this is ignored. See [barometer.md](barometer.md).",
                     example: "bmp280"),
        ConfigOption(key: "no_barometer", kind: .flag, defaultText: "false",
                     help: "Do not read a barometer (nor a replayed recording's pressure file): no floors, no relative_altitude_m.",
                     details: "STATUS then shows the barometer as `unavailable`, \"barometer disabled\"."),
        ConfigOption(key: "replay", kind: .path, defaultText: "(none)",
                     help: "Replay a t,x,y,z recording (CSV, plain or gzip) instead of reading a sensor.", valueName: "file",
                     details: "A barometer's `t,p_kpa` file beside it (`walk.csv.gz` → `walk.pressure.csv` or `walk.pressure.csv.gz`) is replayed with it: see [barometer.md](barometer.md).",
                     example: "/usr/local/share/stepd/walk-inhand.csv.gz"),
        ConfigOption(key: "speed", kind: .number(0.01...1000), defaultText: "1",
                     help: "Replay speed: 1 is real time.", valueName: "x"),
        ConfigOption(key: "loop", kind: .flag, defaultText: "false",
                     help: "Start the replay again when it ends, the clock carrying on."),
        ConfigOption(key: "units", kind: .choice(["auto", "g", "mps2"]), defaultText: "auto",
                     help: "The unit of the replayed recording's x, y, z: mps2 (m/s², stepd's format), g, or auto.", valueName: "unit",
                     details: "auto takes the unit the header names (`x_g,y_g,z_g`, `x_mps2,y_mps2,z_mps2`), else g when the median magnitude of the first 1000 samples is from 0.5 to 2 (gravity in g; in m/s² it is about 9.81), with a notice in the log; else m/s². g is the unit of actipy, stepcount and the Axivity and ActiGraph exports. See [analysis.md](analysis.md#input)."),
        ConfigOption(key: "demo", kind: .flag, defaultText: "false",
                     help: "Play the bundled real recording in a loop, as a demo: its steps go to a throwaway history, never the system's.",
                     details: "`make run` passes it. STATUS then says `\"demo\":true`; without it and without `replay`, stepd reads an accelerometer or waits for one."),
        ConfigOption(key: "max_clients", kind: .integer(1...65_536), defaultText: "256",
                     help: "The most clients connected at once; the next one gets an ERROR and is closed.", valueName: "n"),
        ConfigOption(key: "max_clients_per_user", kind: .integer(1...65_536), defaultText: "32",
                     help: "The most connections one user may hold (root is not counted; the admin group and the daemon's user are, like anyone).",
                     valueName: "n"),
        ConfigOption(key: "reserved_clients", kind: .integer(0...65_535), defaultText: "8",
                     help: "Connection slots kept for root (uid 0) alone; not even the admin group uses them.", valueName: "n",
                     details: "A small `max_clients` shrinks this and `max_clients_per_user` rather than being refused."),
        ConfigOption(key: "max_requests_in_flight", kind: .integer(1...1024), defaultText: "16",
                     help: "Requests a connection may have waiting behind unread replies; a client past it that reads nothing for 3 s is closed.",
                     valueName: "n"),
        ConfigOption(key: "max_unsent_kib", kind: .integer(1...1_048_576), defaultText: "64",
                     help: "A watcher that leaves more than this many KiB unread is dropped; no reply starts while a client leaves that much unread.",
                     valueName: "kib"),
        ConfigOption(key: "admin_group", kind: .path, defaultText: "(none)",
                     help: "A group whose members may reset the count (root and the daemon's own user always may); their connections count like anyone's.",
                     valueName: "group", example: "stepadmin"),
        ConfigOption(key: "log_level", kind: .choice(logLevels), defaultText: "info",
                     help: "The least severe level logged to stderr (the journal under systemd).", valueName: "level"),
        ConfigOption(key: "gpsd", kind: .address, defaultText: "localhost:2947",
                     help: "gpsd's address, HOST:PORT (IPv6 as [::1]:2947).", valueName: "host:port",
                     details: "See [gps.md](gps.md)."),
        ConfigOption(key: "no_gps", kind: .flag, defaultText: "false",
                     help: "Do not read positions from gpsd.",
                     details: "STATUS then shows the GPS as `unavailable`, \"GPS disabled\"."),
        ConfigOption(key: "gps_retry_s", kind: .number(0.1...30), defaultText: "2",
                     help: "The first retry after gpsd is lost or unreachable (s); doubles up to 60 s.", valueName: "s"),
        ConfigOption(key: "track_max_eph_m", kind: .number(1...1000), defaultText: "25",
                     help: "Fixes with a larger horizontal error (m) stay out of the track and visits.", valueName: "m"),
        ConfigOption(key: "visit_radius_m", kind: .number(1...10_000), defaultText: "100",
                     help: "A visit's radius (m): a stay is fixes within this distance of their centre.", valueName: "m"),
        ConfigOption(key: "visit_min_stay_s", kind: .number(1...86_400), defaultText: "300",
                     help: "The shortest stay that makes a visit (s).", valueName: "s"),
        ConfigOption(key: "mqtt_url", kind: .path, defaultText: "(none: MQTT off)",
                     help: "Publish to this MQTT broker: mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (TLS, 8883).",
                     valueName: "url",
                     details: "The switch that turns publishing on; see [fleet.md](fleet.md) for the topics and payloads. Minute bins and visits wait in the history database until the broker acknowledges them. A broker that is down or unreachable, at start or later, is tried again 1 s later, then twice as long each time up to 30 s; STATUS's `mqtt.error` says why it waits and when it tries next.",
                     example: "mqtt://broker.local:1883"),
        ConfigOption(key: "mqtt_device_id", kind: .path, defaultText: "(derived from the machine id)",
                     help: "This device's stable key in payloads and Home Assistant, and its name in topics: letters, digits, - and _.", valueName: "id",
                     details: "By default an id derived from /etc/machine-id, which is never published itself (else the host name); see [fleet.md](fleet.md#who-the-device-is).", example: "wearable-07"),
        ConfigOption(key: "mqtt_topic_prefix", kind: .path, defaultText: "(stepd/<host>-<8 digits of the id>, or stepd/<device id>)",
                     help: "The topic prefix the device publishes under.", valueName: "prefix",
                     example: "lab/stepd/wearable-07"),
        ConfigOption(key: "mqtt_keepalive_s", kind: .integer(5...3600), defaultText: "60",
                     help: "MQTT keepalive (s): how soon the broker notices a device gone and publishes its last will.",
                     valueName: "s",
                     details: "The broker declares the device offline after 1.5 × this without a packet."),
        ConfigOption(key: "mqtt_ca_file", kind: .path, defaultText: "(the system's CAs)",
                     help: "With mqtts://: the CA certificate (PEM) that signed the broker's.", valueName: "file",
                     example: "/etc/stepd/mqtt-ca.crt"),
        ConfigOption(key: "mqtt_cert_file", kind: .path, defaultText: "(none)",
                     help: "With mqtts://: this device's client certificate (PEM), for a broker that asks for one.",
                     valueName: "file", details: "Give `mqtt_key_file` with it.", example: "/etc/stepd/mqtt-client.crt"),
        ConfigOption(key: "mqtt_key_file", kind: .path, defaultText: "(none)",
                     help: "With mqtts://: the client certificate's private key (PEM, not encrypted).", valueName: "file",
                     example: "/etc/stepd/mqtt-client.key"),
        ConfigOption(key: "mqtt_username", kind: .path, defaultText: "(none)",
                     help: "The user name to give the broker.", valueName: "name", example: "wearable-07"),
        ConfigOption(key: "mqtt_password_file", kind: .path, defaultText: "(none)",
                     help: "A file whose first line is the broker password; it must be readable by the service alone.",
                     valueName: "file",
                     details: "A file that group or others may read, or that another user owns, is refused (exit status 78): `chmod 600` it and `chown` it to the user stepd runs as. Needs `mqtt_username`.",
                     example: "/etc/stepd/mqtt-password"),
        ConfigOption(key: "mqtt_homeassistant", kind: .flag, defaultText: "false",
                     help: "Publish Home Assistant discovery: steps, distance, cadence and activity sensors, floors with a barometer and a device tracker with GPS on, as one device named after the host."),
    ]

    /// Options that only make sense on the command line; stepd.conf rejects them.
    public static let commandLineOnly: [ConfigOption] = [
        ConfigOption(key: "config", kind: .path, defaultText: defaultPath,
                     help: "The configuration file; a missing default file is fine, a missing given file is an error.",
                     valueName: "file"),
        ConfigOption(key: "list_devices", kind: .flag, defaultText: "false",
                     help: "List the IIO accelerometers (name, label, id, capture, rates, mount matrix) and barometers, and exit."),
    ]
}
