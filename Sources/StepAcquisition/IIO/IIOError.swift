import Foundation
import StepProcessing

/// Why an IIO accelerometer (or barometer) cannot be read right now, as one sentence a person can act on.
/// Every case is a state the daemon reports and retries from, never a reason to exit.
public enum IIOError: Error, Equatable, CustomStringConvertible {
    /// libiio could not open the context (no IIO subsystem, no iiod at that address).
    case contextUnavailable(uri: String, reason: String)
    /// The context has devices, but none with accel_x/y/z input channels.
    case noAccelerometer(uri: String, found: [String])
    /// `--device` named something that is not there.
    case deviceNotFound(selector: String, accelerometers: [String])
    /// The context has devices, but none with a pressure input channel.
    case noBarometer(uri: String, found: [String])
    /// `--barometer` named something that is not there.
    case barometerNotFound(selector: String, barometers: [String])
    /// Another reader (iio-sensor-proxy, a second stepd) holds the buffer or the character device.
    case deviceBusy(device: String, path: String)
    /// The device went away while we were reading it.
    case disconnected(device: String)
    /// An attribute could not be read or written.
    case attributeFailed(device: String, attribute: String, reason: String)
    /// An attribute holds something we cannot use.
    case badAttribute(device: String, attribute: String, value: String, reason: String)
    /// The buffer could not be created or read.
    case bufferFailed(device: String, reason: String)
    /// The daemon may not open the device's node or write its attributes (EACCES, EPERM): on a device that has
    /// just appeared, udev has not applied 60-stepd.rules yet; later, the rule or the group is missing.
    case notPermitted(device: String, what: String, reason: String)

    public var description: String {
        switch self {
        case .contextUnavailable(let uri, let reason):
            return "cannot open the IIO context '\(uri)' (\(reason))"
                + (uri.hasPrefix("local") ? ": no IIO subsystem or no IIO devices on this machine" : "")
        case .noAccelerometer(let uri, let found):
            return found.isEmpty
                ? "no IIO accelerometer at '\(uri)': no IIO devices found"
                : "no IIO accelerometer at '\(uri)': found only \(found.joined(separator: ", "))"
        case .deviceNotFound(let selector, let accelerometers):
            return "no IIO accelerometer named '\(selector)' (by name, label or iio:deviceN); "
                + (accelerometers.isEmpty ? "there is none" : "there is \(accelerometers.joined(separator: ", "))")
        case .noBarometer(let uri, let found):
            return found.isEmpty
                ? "no IIO barometer at '\(uri)': no IIO devices found"
                : "no IIO barometer at '\(uri)': found only \(found.joined(separator: ", "))"
        case .barometerNotFound(let selector, let barometers):
            return "no IIO barometer named '\(selector)' (by name, label or iio:deviceN); "
                + (barometers.isEmpty ? "there is none" : "there is \(barometers.joined(separator: ", "))")
        case .deviceBusy(let device, let path):
            return "\(device) is busy: another reader (such as iio-sensor-proxy) holds \(path); "
                + "see docs/iio.md to give the device to stepd"
        case .disconnected(let device):
            return "\(device) disconnected; waiting for it to come back"
        case .attributeFailed(let device, let attribute, let reason):
            return "\(device): cannot access \(attribute) (\(reason))"
        case .badAttribute(let device, let attribute, let value, let reason):
            return "\(device): \(attribute) = '\(value)' is unusable: \(reason)"
        case .bufferFailed(let device, let reason):
            return "\(device): buffered capture failed (\(reason))"
        case .notPermitted(let device, let what, let reason):
            return "\(device): \(what): \(reason); the daemon's user needs group stepd and udev/60-stepd.rules "
                + "(docs/service.md)"
        }
    }
}

extension IIOError {
    /// An attribute that could not be read or written, from the errno libiio gave: a refusal of permission is
    /// `notPermitted` (udev has not given the device to group stepd yet, or the rule is missing).
    static func accessFailed(device: String, attribute: String, errno code: Int32) -> IIOError {
        let reason = IIODevice.message(errno: code)
        if code == EACCES || code == EPERM {
            return .notPermitted(device: device, what: "cannot access \(attribute)", reason: reason)
        }
        return .attributeFailed(device: device, attribute: attribute, reason: reason)
    }

    /// No device of the kind asked for: none at all, or none by the name given. Nothing to retry until one appears.
    var isNoDevice: Bool {
        switch self {
        case .noAccelerometer, .deviceNotFound, .noBarometer, .barometerNotFound: return true
        default: return false
        }
    }

    /// The device went away (it may come back as a new device, with its permissions to be set again).
    var isDisconnection: Bool {
        if case .disconnected = self { return true }
        return false
    }

    /// The state a source shows for this fault: `waiting` while its device is missing (the caller knows what
    /// missing means for its kind of device), else busy, disconnected or unavailable.
    func sourceState(missing: Bool) -> SourceState {
        if missing { return .waiting(reason: description) }
        switch self {
        case .deviceBusy: return .busy(reason: description)
        case .disconnected: return .disconnected(reason: description)
        default: return .unavailable(reason: description)
        }
    }
}
