import Foundation
import StepProcessing

/// One key of stepd.conf: its kind, default and meaning. docs/configuration.md documents the same list;
/// a command-line flag of the same name with dashes (state_dir → --state-dir) overrides the file.
public struct ConfigOption: Sendable {
    public enum Kind: Sendable {
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

    /// Every key stepd.conf accepts.
    public static let all: [ConfigOption] = [
        ConfigOption(key: "socket", kind: .path, defaultText: "/run/stepd/stepd.sock",
                     help: "The Unix socket to listen on (ignored under socket activation, where stepd.socket decides)."),
        ConfigOption(key: "state_dir", kind: .path, defaultText: defaultStateDirectory,
                     help: "Where the history database stepd.sqlite lives."),
        ConfigOption(key: "retention_days", kind: .integer(1...36_500), defaultText: String(defaultRetentionDays),
                     help: "History older than this many days is pruned (at start and hourly)."),
        ConfigOption(key: "detector", kind: .choice(StepDetectorKind.allCases.map(\.rawValue)),
                     defaultText: StepDetectorKind.default.rawValue, help: "The step detector."),
        ConfigOption(key: "stride_m", kind: .number(0.2...2.5), defaultText: "0.70",
                     help: "Stride length (m) for the distance estimate from steps; 0.414 × height is a fair guess."),
        ConfigOption(key: "replay", kind: .path, defaultText: "(none)",
                     help: "Replay this t,x,y,z recording (CSV, plain or gzip) instead of reading a sensor."),
        ConfigOption(key: "speed", kind: .number(0.01...1000), defaultText: "1",
                     help: "Replay speed; 1 is real time."),
        ConfigOption(key: "loop", kind: .flag, defaultText: "false",
                     help: "Start the replay again when it ends."),
        ConfigOption(key: "log_level", kind: .choice(logLevels), defaultText: "info",
                     help: "The least severe log level written to the journal (stderr)."),
    ]
}
