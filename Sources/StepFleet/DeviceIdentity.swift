import CLibCrypto
import Foundation

/// Who this device is on the broker without exposing its machine id, which machine-id(5) asks applications
/// never to publish: an application-specific id derived from it as systemd's
/// `sd_id128_get_machine_app_specific()` derives one (HMAC-SHA256 keyed by the 16 bytes of the machine id over
/// the 16 bytes of the application's id, the first 16 bytes of the result made a version-4 UUID), written as
/// 32 hex digits. `systemd-id128 machine-id --app-specific=<stepd's id>` prints the same. The HMAC is libcrypto's
/// (CLibCrypto), loaded on first use: only a daemon that publishes over MQTT asks, and libmosquitto links it.
public enum DeviceIdentity {
    /// stepd's application id: fixed forever, or every device would get a new identity.
    public static let applicationID = "6b1f3c0e9a4d4e57b2c8d05f7e31a9c4"

    /// The id for `machineID` (32 hex digits); nil when it is not one, or when libcrypto cannot be loaded (then
    /// libmosquitto cannot either, and there is no MQTT to name the device for).
    public static func applicationSpecificID(machineID: String, applicationID: String = applicationID) -> String? {
        guard let key = bytes(hex: machineID), let message = bytes(hex: applicationID) else { return nil }
        var mac = [UInt8](repeating: 0, count: 32)
        guard clibcrypto_hmac_sha256(key, key.count, message, message.count, &mac) == 0 else { return nil }
        var id = Array(mac.prefix(16))
        // systemd's id128_make_v4_uuid: the version nibble 4, the variant bits 10.
        id[6] = (id[6] & 0x0F) | 0x40
        id[8] = (id[8] & 0x3F) | 0x80
        return id.map { String(format: "%02x", $0) }.joined()
    }

    /// 16 bytes from 32 hex digits (machine-id(5)'s format, lower or upper case).
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    /// The host name up to its first dot, with anything a topic level or Home Assistant object id cannot hold
    /// turned into `-`; nil when nothing usable is left.
    public static func hostName(_ raw: String = ProcessInfo.processInfo.hostName) -> String? {
        guard let first = raw.split(separator: ".").first else { return nil }
        let cleaned = String(first.unicodeScalars.map { FleetTopics.isValidDeviceID(String($0)) ? Character($0) : "-" })
        return FleetTopics.isValidDeviceID(cleaned) ? cleaned : nil
    }
}
