/// The `--mqtt-*` flags (or stepd.conf's `mqtt_*` keys) as given, and what can be wrong with them before any
/// file is read. Pure, so that each refusal is unit-tested; stepd's MQTTOptions turns a problem into its
/// usage error (exit status 64), which names the stepd.conf file and line when the value came from there.
public struct FleetFlags: Sendable, Equatable {
    public var url: String?
    public var deviceID: String?
    public var topicPrefix: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var username: String?
    public var passwordFile: String?
    public var homeAssistant = false

    public init(url: String? = nil, deviceID: String? = nil, topicPrefix: String? = nil, caFile: String? = nil,
                certFile: String? = nil, keyFile: String? = nil, username: String? = nil, passwordFile: String? = nil,
                homeAssistant: Bool = false) {
        self.url = url
        self.deviceID = deviceID
        self.topicPrefix = topicPrefix
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.username = username
        self.passwordFile = passwordFile
        self.homeAssistant = homeAssistant
    }

    public enum Problem: Error, Equatable, CustomStringConvertible {
        /// A flag that means something only with a broker.
        case needsURL(flag: String)
        case url(BrokerURL.ParseError)
        case deviceID(String)
        case topicPrefix(String)
        /// A TLS file with an mqtt:// broker; `suggested` is the mqtts:// URL to write instead.
        case tlsFileWithoutTLS(flag: String, suggested: String)
        case certificateWithoutKey
        case passwordFileWithoutUsername

        public var description: String {
            switch self {
            case .needsURL(let flag): return "--\(flag) needs --mqtt-url: MQTT is off without a broker"
            case .url(let error): return "--mqtt-url: \(error)"
            case .deviceID(let id): return "--mqtt-device-id \"\(id)\": use 1 to 64 letters, digits, - and _ (it is a topic level)"
            case .topicPrefix(let prefix): return "--mqtt-topic-prefix \"\(prefix)\": a topic cannot be empty or hold + or #"
            case .tlsFileWithoutTLS(let flag, let suggested): return "--\(flag) is for TLS: write the broker as \(suggested)"
            case .certificateWithoutKey:
                return "--mqtt-cert-file and --mqtt-key-file go together: a client certificate needs its key"
            case .passwordFileWithoutUsername:
                return "--mqtt-password-file needs --mqtt-username: MQTT sends a password only with a user name"
            }
        }
    }

    /// The broker, nil when MQTT is off; the first problem found, in the order of the flags' sections.
    @discardableResult
    public func check() throws(Problem) -> BrokerURL? {
        guard let url else {
            let given = [("mqtt-device-id", deviceID), ("mqtt-topic-prefix", topicPrefix), ("mqtt-ca-file", caFile),
                         ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile), ("mqtt-username", username),
                         ("mqtt-password-file", passwordFile)].first { $0.1 != nil }
            if let given { throw .needsURL(flag: given.0) }
            if homeAssistant { throw .needsURL(flag: "mqtt-homeassistant") }
            return nil
        }
        let broker: BrokerURL
        do { broker = try BrokerURL(parsing: url) } catch { throw .url(error) }
        if let deviceID, !FleetTopics.isValidDeviceID(deviceID) { throw .deviceID(deviceID) }
        if let topicPrefix, !FleetTopics.isValidTopic(topicPrefix) { throw .topicPrefix(topicPrefix) }
        if !broker.tls, let tlsFlag = [("mqtt-ca-file", caFile), ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile)]
            .first(where: { $0.1 != nil }) {
            // The plain port moves to the TLS one; a port of its own is kept.
            let port = broker.port == BrokerURL.plainPort ? BrokerURL.tlsPort : broker.port
            throw .tlsFileWithoutTLS(flag: tlsFlag.0, suggested: "mqtts://\(broker.host):\(port)")
        }
        if (certFile == nil) != (keyFile == nil) { throw .certificateWithoutKey }
        if passwordFile != nil && username == nil { throw .passwordFileWithoutUsername }
        return broker
    }
}
