import Foundation

/// What `--mqtt-*` set: the broker, who this device is, and how to authenticate.
public struct FleetConfiguration: Sendable {
    public var broker: BrokerURL
    public var deviceID: String
    public var topicPrefix: String
    public var keepaliveSeconds = 60
    /// TLS (mqtts://): the CA that signed the broker's certificate (nil: the system's), and a client
    /// certificate with its key when the broker asks for one.
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var username: String?
    public var password: String?
    public var homeAssistant = false

    public init(broker: BrokerURL, deviceID: String, topicPrefix: String? = nil) {
        self.broker = broker
        self.deviceID = deviceID
        self.topicPrefix = topicPrefix ?? FleetTopics.defaultPrefix(deviceID: deviceID)
    }

    /// The machine's id (systemd's /etc/machine-id, 32 hex digits), else its host name: stable across
    /// restarts, different on each board.
    public static func defaultDeviceID() -> String {
        for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
                if FleetTopics.isValidDeviceID(id) { return id }
            }
        }
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "stepd"
        let cleaned = String(host.unicodeScalars.map { FleetTopics.isValidDeviceID(String($0)) ? Character($0) : "-" })
        return FleetTopics.isValidDeviceID(cleaned) ? cleaned : "stepd"
    }
}

/// A password file: its first line is the password. It must be readable by the service alone, as an SSH key
/// must: a group- or world-readable one is refused rather than used.
public enum PasswordFile {
    public enum Failure: Error, CustomStringConvertible, Equatable {
        case missing(path: String, reason: String)
        case tooOpen(path: String, mode: String)
        case empty(path: String)

        public var description: String {
            switch self {
            case .missing(let path, let reason): return "cannot read the MQTT password file \(path): \(reason)"
            case .tooOpen(let path, let mode):
                return "the MQTT password file \(path) may be read by others (mode \(mode)); make it readable by the service alone: chmod 600 \(path)"
            case .empty(let path): return "the MQTT password file \(path) is empty"
            }
        }

        /// 66 for a file that cannot be read, 78 (a bad configuration) for one that must not be used.
        public var isMissingInput: Bool { if case .missing = self { return true } else { return false } }
    }

    public static func read(path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Failure.missing(path: path, reason: String(cString: strerror(errno))) }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 { throw Failure.tooOpen(path: path, mode: String(mode, radix: 8)) }
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw Failure.missing(path: path, reason: access(path, R_OK) == 0 ? "not UTF-8 text" : String(cString: strerror(EACCES)))
        }
        let password = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let trimmed = password.hasSuffix("\r") ? String(password.dropLast()) : password
        if trimmed.isEmpty { throw Failure.empty(path: path) }
        return trimmed
    }
}
