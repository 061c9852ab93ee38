import Foundation
import StepProcessing

/// One key of stepd.conf: its kind, default and meaning. docs/configuration.md documents the same list;
/// a command-line flag of the same name with dashes (state_dir → --state-dir) overrides the file.
public struct ConfigOption: Sendable {
    public enum Kind: Sendable {
        /// A path or a name: any text without NUL.
        case path
        case choice([String])
        case integer(ClosedRange<Int>)
        case number(ClosedRange<Double>)
        case flag

        func parse(_ text: String) -> ConfigValue? {
            switch self {
            case .path:
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
            }
        }

        var expectation: String {
            switch self {
            case .path: return "a path"
            case .choice(let choices): return "one of " + choices.joined(separator: ", ")
            case .integer(let r): return "a whole number from \(r.lowerBound) to \(r.upperBound)"
            case .number(let r): return "a number from \(Self.format(r.lowerBound)) to \(Self.format(r.upperBound))"
            case .flag: return "true or false"
            }
        }

        private static func format(_ x: Double) -> String {
            x.rounded() == x ? String(Int(x)) : String(x)
        }
    }

    public let key: String
    public let kind: Kind
    /// The default as the documentation writes it.
    public let defaultText: String
    public let help: String

    public init(key: String, kind: Kind, defaultText: String, help: String) {
        self.key = key
        self.kind = kind
        self.defaultText = defaultText
        self.help = help
    }
}

extension ConfigOption {
    public static let defaultPath = "/etc/stepd/stepd.conf"
    public static let defaultStateDirectory = "/var/lib/stepd"
    public static let defaultRetentionDays = 400
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Every key stepd.conf accepts; each is also the command-line flag `--key-with-dashes`, which wins.
    public static let all: [ConfigOption] = [
        ConfigOption(key: "socket", kind: .path, defaultText: "/run/stepd/stepd.sock",
                     help: "The Unix socket to listen on; under socket activation stepd.socket decides instead."),
        ConfigOption(key: "state_dir", kind: .path, defaultText: defaultStateDirectory,
                     help: "Where the history database stepd.sqlite lives ($STATE_DIRECTORY under systemd)."),
        ConfigOption(key: "retention_days", kind: .integer(1...36_500), defaultText: String(defaultRetentionDays),
                     help: "History older than this many days is pruned, at start and hourly."),
        ConfigOption(key: "detector", kind: .choice(StepDetectorKind.allCases.map(\.rawValue)),
                     defaultText: StepDetectorKind.default.rawValue, help: "The step detector."),
        ConfigOption(key: "height", kind: .number(0.5...2.5), defaultText: "1.70",
                     help: "The walker's height in metres, for the stride length until GPS calibrates it."),
        ConfigOption(key: "device", kind: .path, defaultText: "(the first accelerometer)",
                     help: "The IIO accelerometer to read: its name, label or iio:deviceN."),
        ConfigOption(key: "iio_uri", kind: .path, defaultText: "local:",
                     help: "The libiio context: local: or ip:HOST for a board running iiod."),
        ConfigOption(key: "replay", kind: .path, defaultText: "(none)",
                     help: "Replay this t,x,y,z recording (CSV, plain or gzip) instead of reading a sensor."),
        ConfigOption(key: "speed", kind: .number(0.01...1000), defaultText: "1",
                     help: "Replay speed; 1 is real time."),
        ConfigOption(key: "loop", kind: .flag, defaultText: "false",
                     help: "Start the replay again when it ends."),
        ConfigOption(key: "max_clients", kind: .integer(1...65_536), defaultText: "256",
                     help: "The most clients connected at once; the next one gets an ERROR and is closed."),
        ConfigOption(key: "max_clients_per_user", kind: .integer(1...65_536), defaultText: "32",
                     help: "The most connections one user may hold (root and the admin group are not counted)."),
        ConfigOption(key: "reserved_clients", kind: .integer(0...65_535), defaultText: "8",
                     help: "Connection slots kept for root, the daemon's user and the admin group."),
        ConfigOption(key: "max_requests_in_flight", kind: .integer(1...1024), defaultText: "16",
                     help: "Requests a connection may have waiting for an answer; a client past it is closed."),
        ConfigOption(key: "max_unsent_kib", kind: .integer(1...1_048_576), defaultText: "64",
                     help: "A watcher that leaves more than this many KiB unread is dropped; no reply starts while a client leaves that much unread."),
        ConfigOption(key: "admin_group", kind: .path, defaultText: "(none)",
                     help: "A group whose members may reset the count (root and the daemon's user always may)."),
        ConfigOption(key: "log_level", kind: .choice(logLevels), defaultText: "info",
                     help: "The least severe log level written to stderr (the journal)."),
    ]
}
