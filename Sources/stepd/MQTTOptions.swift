import ArgumentParser
import Foundation
import Logging
import StepFleet
import StepProtocol
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

    var flags: FleetFlags {
        FleetFlags(url: url, deviceID: deviceID, topicPrefix: topicPrefix, caFile: caFile, certFile: certFile, keyFile: keyFile,
                   username: username, passwordFile: passwordFile, homeAssistant: homeAssistant)
    }

    /// What can be checked without reading a file (FleetFlags, unit-tested in FleetTests); each message names its
    /// flag, so a bad stepd.conf value is reported with the file, line and key.
    func validate() throws {
        do { try flags.check() } catch { throw ValidationError(error.description) }
    }

    /// The publisher's settings, or nil when MQTT is off. Files are checked here: a TLS file missing is 66,
    /// a password file others may read, or another user owns, is 78.
    func configuration() throws -> FleetConfiguration? {
        guard let broker = try flags.check() else { return nil }
        var configuration = deviceID.map { FleetConfiguration(broker: broker, deviceID: $0, topicPrefix: topicPrefix) }
            ?? FleetConfiguration(broker: broker, defaultIdentityWithTopicPrefix: topicPrefix)
        configuration.keepaliveSeconds = keepaliveSeconds
        for (flag, path) in [("mqtt-ca-file", caFile), ("mqtt-cert-file", certFile), ("mqtt-key-file", keyFile)] {
            guard let path else { continue }
            // OpenSSL opens these by name, later, and would wait on a FIFO for ever: refused here, at once.
            if let reason = StartupFile.refusal(path: path) {
                throw StartFailure(description: "--\(flag) \(path): \(reason)", status: .noInput)
            }
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
