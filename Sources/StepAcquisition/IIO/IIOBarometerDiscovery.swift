import CIIO
import Foundation
import Glibc

/// Finds IIO pressure sensors (Documentation/ABI/testing/sysfs-bus-iio: `in_pressure_input` in kPa, or
/// `in_pressure_raw` × `in_pressure_scale` after `in_pressure_offset`) in a libiio context: bmp280/bme280/
/// bmp380 and bmp580 (bmp280 driver), lps22hb (st_pressure), ms5611, dps310, HID sensor hubs (hid-sensor-press).
public enum IIOBarometerDiscovery {
    /// Every barometer at `uri`, in libiio's order (by id). Throws only when the context cannot be opened.
    public static func barometers(uri: String) throws -> [BarometerDescription] {
        let context = try IIOContext(uri: uri)
        return context.devices.filter(isBarometer).map { describe($0) }
    }

    /// The barometer `selector` names (id, name or label), or the first one when `selector` is nil.
    static func find(uri: String, selector: String?) throws -> (IIODevice, BarometerDescription) {
        let context = try IIOContext(uri: uri)
        let devices = context.devices
        let found = devices.filter(isBarometer).map { ($0, describe($0)) }
        guard !found.isEmpty else { throw IIOError.noBarometer(uri: uri, found: devices.map(IIODiscovery.summary)) }
        guard let selector else { return found[0] }
        if let match = found.first(where: { $0.1.matches(selector) }) { return match }
        throw IIOError.barometerNotFound(selector: selector, barometers: found.map { $0.1.displayName })
    }

    /// The barometer as a kind of sensor for the shared loop (IIOSensorLoop).
    struct Rule: IIODiscoveryRule {
        var looking: String { "a barometer" }
        func find(uri: String, selector: String?) throws -> (IIODevice, BarometerDescription) {
            try IIOBarometerDiscovery.find(uri: uri, selector: selector)
        }
    }

    /// A barometer has an input channel `pressure` (or `pressure0`) with a processed or a raw value.
    static func isBarometer(_ device: IIODevice) -> Bool {
        !device.isTrigger && pressureChannel(of: device) != nil
    }

    static func pressureChannel(of device: IIODevice) -> OpaquePointer? {
        for id in ["pressure", "pressure0"] {
            if let channel = device.inputChannel(id),
               device.channelHasAttribute(channel, "input") || device.channelHasAttribute(channel, "raw") {
                return channel
            }
        }
        return nil
    }

    static func describe(_ device: IIODevice) -> BarometerDescription {
        let channel = pressureChannel(of: device)
        let processed = channel.map { device.channelHasAttribute($0, "input") } ?? false
        let rate = rateAttribute(of: device)
        return BarometerDescription(
            id: device.id, name: device.name, label: device.label,
            reading: processed ? "in_pressure_input" : "in_pressure_raw × in_pressure_scale",
            hasTemperature: device.inputChannel("temp") != nil,
            ratesHz: rate.map { IIODiscovery.availableRates(of: device, at: $0) } ?? [],
            rateHz: rate.flatMap { try? Double(IIODiscovery.read(device, $0, "sampling_frequency")) })
    }

    /// sampling_frequency as a device attribute or in_pressure_sampling_frequency (hid-sensor-press).
    static func rateAttribute(of device: IIODevice) -> IIODiscovery.RateAttribute? {
        if device.hasAttribute("sampling_frequency") { return .device }
        if let channel = pressureChannel(of: device), device.channelHasAttribute(channel, "sampling_frequency") {
            return .channel(channel)
        }
        return nil
    }
}

/// What the discovery tells about one barometer, for `--list-devices` and for choosing one.
public struct BarometerDescription: IIONamed, Equatable, Sendable {
    public var id: String
    public var name: String?
    public var label: String?
    /// How the pressure is read: the processed value or raw × scale.
    public var reading: String
    public var hasTemperature: Bool
    public var ratesHz: [Double]
    public var rateHz: Double?

    /// One paragraph for `stepd --list-devices`.
    public var listing: String {
        var lines = ["\(id)  (barometer)", "  name:         \(name ?? "-")", "  label:        \(label ?? "-")"]
        lines.append("  pressure:     \(reading) (kPa), polled")
        lines.append("  rates:        " + (ratesHz.isEmpty ? "-" : ratesHz.map(IIODiscovery.format).joined(separator: " ") + " Hz")
                     + (rateHz.map { " (now \(IIODiscovery.format($0)) Hz)" } ?? ""))
        lines.append("  temperature:  " + (hasTemperature ? "yes (in_temp_*)" : "no"))
        return lines.joined(separator: "\n")
    }
}
