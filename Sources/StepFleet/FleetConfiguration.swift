import Foundation
import StepProtocol

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

    /// The human-readable name: Home Assistant's device name, and part of the default topic prefix when the
    /// device id is the default one. The host name, else the device id.
    public var deviceName: String
    /// What Home Assistant's entity ids start with: the host name and the first 8 digits of the device id (as the
    /// default topic prefix ends), the host name alone without a machine id, or the device id given.
    public var entityName: String

    public init(broker: BrokerURL, deviceID: String, topicPrefix: String? = nil, deviceName: String? = nil,
                entityName: String? = nil) {
        self.broker = broker
        self.deviceID = deviceID
        self.deviceName = deviceName ?? deviceID
        self.entityName = entityName ?? deviceID
        self.topicPrefix = topicPrefix ?? FleetTopics.defaultPrefix(deviceID: deviceID)
    }

    /// The settings without `--mqtt-device-id`: the id derived from the machine id (DeviceIdentity), or the host
    /// name when there is no machine id; the prefix `stepd/<host>-<first 8 digits of the id>`, readable and
    /// still unique when boards share a host name (every fresh image is "mobian" or "raspberrypi").
    public init(broker: BrokerURL, defaultIdentityWithTopicPrefix topicPrefix: String?,
                machineIDFiles: [String] = ["/etc/machine-id", "/var/lib/dbus/machine-id"],
                hostName: String? = DeviceIdentity.hostName()) {
        let host = hostName ?? "stepd"
        var derived: String?
        for path in machineIDFiles {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
               let id = DeviceIdentity.applicationSpecificID(machineID: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                derived = id
                break
            }
        }
        let deviceID = derived ?? host
        let short = derived.map { "\(host)-\($0.prefix(8))" } ?? host
        let prefix = derived == nil ? FleetTopics.defaultPrefix(deviceID: deviceID) : "stepd/\(short)"
        self.init(broker: broker, deviceID: deviceID, topicPrefix: topicPrefix ?? prefix, deviceName: host, entityName: short)
    }
}

/// A password file: its first line is the password. It must be readable by the service alone, as an SSH key
/// must: one owned by another user (who could read it, or make it readable) or that its group or others may read
/// is refused rather than used.
public enum PasswordFile {
    public enum Failure: Error, CustomStringConvertible, Equatable {
        case missing(path: String, reason: String)
        case notOwned(path: String, owner: uid_t, service: uid_t)
        case tooOpen(path: String, mode: String)
        case empty(path: String)

        public var description: String {
            switch self {
            case .missing(let path, let reason): return "cannot read the MQTT password file \(path): \(reason)"
            case .notOwned(let path, let owner, let service):
                return "the MQTT password file \(path) belongs to \(PasswordFile.user(owner)) but stepd runs as \(PasswordFile.user(service)); "
                    + "give it to the service: chown \(PasswordFile.name(service) ?? String(service)) \(path)"
            case .tooOpen(let path, let mode):
                return "the MQTT password file \(path) may be read by others (mode \(mode)); make it readable by the service alone: chmod 600 \(path)"
            case .empty(let path): return "the MQTT password file \(path) is empty"
            }
        }

        /// 66 for a file that cannot be read, 78 (a bad configuration) for one that must not be used.
        public var isMissingInput: Bool { if case .missing = self { return true } else { return false } }
    }

    /// `serviceUID`: the user the daemon runs as (its effective uid), who must own the file.
    public static func read(path: String, serviceUID: uid_t = geteuid()) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Failure.missing(path: path, reason: String(cString: strerror(errno))) }
        if let kind = StartupFile.notRegularKind(mode: info.st_mode) {
            throw Failure.missing(path: path, reason: "it is \(kind), not a regular file")
        }
        if info.st_uid != serviceUID { throw Failure.notOwned(path: path, owner: info.st_uid, service: serviceUID) }
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

    /// "stepd (uid 998)", or "uid 998" for a uid without a name.
    static func user(_ uid: uid_t) -> String {
        name(uid).map { "\($0) (uid \(uid))" } ?? "uid \(uid)"
    }

    static func name(_ uid: uid_t) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
