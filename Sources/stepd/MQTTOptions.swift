import ArgumentParser
import Foundation
import Logging
import StepService

/// The daemon's MQTT options (docs/fleet.md): off unless `--mqtt-url` is given.
struct MQTTOptions: ParsableArguments {
    @Option(.named("mqtt_url")) var url: String?
    @Option(.named("mqtt_device_id")) var deviceID: String?
    @Option(.named("mqtt_topic_prefix")) var topicPrefix: String?
    @Option(.named("mqtt_keepalive_s")) var keepaliveSeconds: Int
    @Option(.named("mqtt_ca_file")) var caFile: String?
    @Option(.named("mqtt_cert_file")) var certFile: String?
    @Option(.named("mqtt_key_file")) var keyFile: String?
    @Option(.named("mqtt_username")) var username: String?
    @Option(.named("mqtt_password_file")) var passwordFile: String?
    @Flag(.named("mqtt_homeassistant")) var homeAssistant: Bool

    /// What can be checked without reading a file; each message names its flag, so a bad stepd.conf value
    /// is reported with the file, line and key.
    func validate() throws {
        guard let url else {
            let given = [("mqtt-device-id", deviceID), ("mqtt-topic-prefix", topicPrefix), ("mqtt-ca-file", caFile),
                         ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile), ("mqtt-username", username),
                         ("mqtt-password-file", passwordFile)].first { $0.1 != nil }
            if let given { throw ValidationError("--\(given.0) needs --mqtt-url: MQTT is off without a broker") }
            if homeAssistant { throw ValidationError("--mqtt-homeassistant needs --mqtt-url: MQTT is off without a broker") }
            return
        }
        let broker: BrokerURL
        do { broker = try BrokerURL(parsing: url) } catch { throw ValidationError("--mqtt-url: \(error)") }
        if let deviceID, !FleetTopics.isValidDeviceID(deviceID) {
            throw ValidationError("--mqtt-device-id \"\(deviceID)\": use 1 to 64 letters, digits, - and _ (it is a topic level)")
        }
        if let topicPrefix, !FleetTopics.isValidTopic(topicPrefix) {
            throw ValidationError("--mqtt-topic-prefix \"\(topicPrefix)\": a topic cannot be empty or hold + or #")
        }
        if !broker.tls, let tlsFlag = [("mqtt-ca-file", caFile), ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile)]
            .first(where: { $0.1 != nil }) {
            throw ValidationError("--\(tlsFlag.0) is for TLS: write the broker as mqtts://\(broker.host):\(broker.port == BrokerURL.plainPort ? BrokerURL.tlsPort : broker.port)")
        }
        if (certFile == nil) != (keyFile == nil) {
            throw ValidationError("--mqtt-cert-file and --mqtt-key-file go together: a client certificate needs its key")
        }
        if passwordFile != nil && username == nil {
            throw ValidationError("--mqtt-password-file needs --mqtt-username: MQTT sends a password only with a user name")
        }
    }

    /// The publisher's settings, or nil when MQTT is off. Files are checked here: a TLS file missing is 66,
    /// a password file others may read is 78.
    func configuration() throws -> FleetConfiguration? {
        guard let url else { return nil }
        let broker = try BrokerURL(parsing: url)
        var configuration = FleetConfiguration(broker: broker, deviceID: deviceID ?? FleetConfiguration.defaultDeviceID(),
                                               topicPrefix: topicPrefix)
        configuration.keepaliveSeconds = keepaliveSeconds
        for (flag, path) in [("mqtt-ca-file", caFile), ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile)] {
            guard let path else { continue }
            guard access(path, R_OK) == 0 else {
                throw StartFailure(description: "--\(flag) \(path): \(String(cString: strerror(errno)))", status: .noInput)
            }
        }
        configuration.caFile = caFile
        configuration.certFile = certFile
        configuration.keyFile = keyFile
        configuration.username = username
        if let passwordFile {
            do { configuration.password = try PasswordFile.read(path: passwordFile) } catch let failure as PasswordFile.Failure {
                throw StartFailure(description: "\(failure)", status: failure.isMissingInput ? .noInput : .config)
            }
        }
        configuration.homeAssistant = homeAssistant
        return configuration
    }
}
