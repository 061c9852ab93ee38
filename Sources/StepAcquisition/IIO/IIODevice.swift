import CIIO
import Foundation
import Glibc
import StepProcessing

/// A libiio context; destroyed when the last device taken from it is released.
/// Not Sendable: a context and its devices stay on the thread that opened them (a source's, or the caller's of
/// a discovery); only IIOBufferCancel crosses threads.
final class IIOContext {
    let pointer: OpaquePointer
    let uri: String

    init(uri: String) throws {
        var error: Int32 = 0
        guard let ctx = ciio_create_context(uri, &error) else {
            throw IIOError.contextUnavailable(uri: uri, reason: IIODevice.message(errno: error))
        }
        pointer = ctx
        self.uri = uri
    }

    deinit { iio_context_destroy(pointer) }

    /// Read/refill timeout; 0 waits for ever.
    func setTimeout(milliseconds: UInt32) { _ = iio_context_set_timeout(pointer, milliseconds) }

    var devices: [IIODevice] {
        (0..<iio_context_get_devices_count(pointer)).compactMap { i in
            iio_context_get_device(pointer, i).map { IIODevice(context: self, pointer: $0) }
        }
    }
}

/// One IIO device with the attribute helpers the sources need; keeps its context alive.
/// Not Sendable, as its context.
struct IIODevice: IIONamed {
    let context: IIOContext
    let pointer: OpaquePointer

    var id: String { String(cString: iio_device_get_id(pointer)) }
    var name: String? { iio_device_get_name(pointer).map { String(cString: $0) } }
    var label: String? { iio_device_get_label(pointer).map { String(cString: $0) } }
    var isTrigger: Bool { iio_device_is_trigger(pointer) }

    var channels: [OpaquePointer] {
        (0..<iio_device_get_channels_count(pointer)).compactMap { iio_device_get_channel(pointer, $0) }
    }

    func inputChannel(_ id: String) -> OpaquePointer? { iio_device_find_channel(pointer, id, false) }

    func channelHasAttribute(_ channel: OpaquePointer, _ attribute: String) -> Bool {
        iio_channel_find_attr(channel, attribute) != nil
    }

    func hasAttribute(_ attribute: String) -> Bool { iio_device_find_attr(pointer, attribute) != nil }

    // MARK: Attributes (sysfs text, trailing newline removed by libiio)

    func readAttribute(_ attribute: String) throws -> String {
        try Self.readText(name: "\(id)/\(attribute)", device: displayName) { iio_device_attr_read(pointer, attribute, $0, $1) }
    }

    func readBufferAttribute(_ attribute: String) throws -> String {
        try Self.readText(name: "\(id)/buffer/\(attribute)", device: displayName) {
            iio_device_buffer_attr_read(pointer, attribute, $0, $1)
        }
    }

    func readAttribute(_ attribute: String, of channel: OpaquePointer) throws -> String {
        let channelID = String(cString: iio_channel_get_id(channel))
        return try Self.readText(name: "\(channelID) \(attribute)", device: displayName) {
            iio_channel_attr_read(channel, attribute, $0, $1)
        }
    }

    func writeAttribute(_ attribute: String, _ value: String) throws {
        let result = iio_device_attr_write(pointer, attribute, value)
        if result < 0 {
            throw IIOError.accessFailed(device: displayName, attribute: attribute, errno: Int32(-result))
        }
    }

    func writeAttribute(_ attribute: String, of channel: OpaquePointer, _ value: String) throws {
        let result = iio_channel_attr_write(channel, attribute, value)
        if result < 0 {
            throw IIOError.accessFailed(device: displayName, attribute: attribute, errno: Int32(-result))
        }
    }

    /// True while the device's files are still there: a removed device answers ENOENT/ENODEV.
    var isPresent: Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        let result = iio_device_attr_read(pointer, "name", &buffer, buffer.count)
        return !(result == -ENOENT || result == -ENODEV || result == -ENXIO)
    }

    static func message(errno: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        iio_strerror(errno, &buffer, buffer.count)
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private static func readText(name: String, device: String,
                                 _ read: (UnsafeMutablePointer<CChar>, Int) -> Int) throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let result = buffer.withUnsafeMutableBufferPointer { read($0.baseAddress!, $0.count) }
        if result < 0 {
            throw IIOError.accessFailed(device: device, attribute: name, errno: Int32(-result))
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// What the discovery tells about one accelerometer, for `--list-devices` and for choosing a source.
public struct AccelerometerDescription: IIONamed, Equatable, Sendable {
    public var id: String
    public var name: String?
    public var label: String?
    public var buffered: Bool
    public var hasTimestamp: Bool
    public var hasStepCounter: Bool
    public var ratesHz: [Double]
    public var rateHz: Double?
    public var mountMatrix: String?
    public var trigger: String?

    /// One paragraph for `stepd --list-devices`.
    public var listing: String {
        func hz(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        var lines = ["\(id)", "  name:         \(name ?? "-")", "  label:        \(label ?? "-")"]
        lines.append("  capture:      " + (buffered ? "buffered" + (hasTimestamp ? " (with timestamps)" : " (no timestamp channel)") : "polling (no buffer support)"))
        lines.append("  rates:        " + (ratesHz.isEmpty ? "-" : ratesHz.map(hz).joined(separator: " ") + " Hz")
                     + (rateHz.map { " (now \(hz($0)) Hz)" } ?? ""))
        lines.append("  mount matrix: \(mountMatrix ?? "none (identity)")")
        if let trigger { lines.append("  trigger:      \(trigger)") }
        if hasStepCounter { lines.append("  step counter: yes (in_steps_input)") }
        return lines.joined(separator: "\n")
    }
}
