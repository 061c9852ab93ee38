import CIIO
import Glibc
import StepProcessing

/// Finds IIO accelerometers in a libiio context and reads what a source needs to know about one:
/// its channels, rates, mount matrix and trigger.
public enum IIODiscovery {
    /// Every accelerometer at `uri`, in libiio's order (by id). Throws only when the context cannot be opened.
    public static func accelerometers(uri: String) throws -> [AccelerometerDescription] {
        let context = try IIOContext(uri: uri)
        return context.devices.filter(isAccelerometer).map { describe($0) }
    }

    /// The accelerometer `selector` names (id, name or label), or the first one when `selector` is nil.
    static func find(uri: String, selector: String?) throws -> (IIODevice, AccelerometerDescription) {
        let context = try IIOContext(uri: uri)
        let devices = context.devices
        let accelerometers = devices.filter(isAccelerometer).map { ($0, describe($0)) }
        guard !accelerometers.isEmpty else {
            throw IIOError.noAccelerometer(uri: uri, found: devices.map(summary))
        }
        guard let selector else { return accelerometers[0] }
        if let match = accelerometers.first(where: { $0.1.matches(selector) }) { return match }
        throw IIOError.deviceNotFound(selector: selector, accelerometers: accelerometers.map { $0.1.displayName })
    }

    /// The accelerometer as a kind of sensor for the shared loop (IIOSensorLoop).
    struct Rule: IIODiscoveryRule {
        var looking: String { "an accelerometer" }
        func find(uri: String, selector: String?) throws -> (IIODevice, AccelerometerDescription) {
            try IIODiscovery.find(uri: uri, selector: selector)
        }
    }

    /// An accelerometer has the three input channels accel_x, accel_y, accel_z.
    static func isAccelerometer(_ device: IIODevice) -> Bool {
        !device.isTrigger && accelerationChannels(of: device) != nil
    }

    static func accelerationChannels(of device: IIODevice) -> [OpaquePointer]? {
        let channels = ["accel_x", "accel_y", "accel_z"].compactMap { device.inputChannel($0) }
        return channels.count == 3 ? channels : nil
    }

    /// "iio:device1 (lm75: temp)": what a non-accelerometer is, for the no-accelerometer message.
    static func summary(_ device: IIODevice) -> String {
        if device.isTrigger { return "\(device.id) (trigger \(device.name ?? "?"))" }
        var kinds: [String] = []
        for channel in device.channels {
            let id = String(cString: iio_channel_get_id(channel))
            let kind = String(id.prefix { !$0.isNumber && $0 != "_" })
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        return "\(device.id) (\(device.name ?? "unnamed"): \(kinds.isEmpty ? "no channels" : kinds.joined(separator: ", ")))"
    }

    static func describe(_ device: IIODevice) -> AccelerometerDescription {
        let channels = accelerationChannels(of: device) ?? []
        let buffered = !channels.isEmpty && channels.allSatisfy { scanFormat($0).is_scan_element }
        let timestamp = device.inputChannel("timestamp").map { scanFormat($0).is_scan_element } ?? false
        let rate = rateAttribute(of: device)
        return AccelerometerDescription(
            id: device.id, name: device.name, label: device.label, buffered: buffered,
            hasTimestamp: timestamp, hasStepCounter: stepCounter(of: device) != nil,
            ratesHz: rate.map { availableRates(of: device, at: $0) } ?? [],
            rateHz: rate.flatMap { try? Double(read(device, $0, "sampling_frequency")) },
            mountMatrix: mountMatrixText(of: device), trigger: currentTrigger(of: device))
    }

    static func scanFormat(_ channel: OpaquePointer) -> ciio_scan_format {
        var format = ciio_scan_format()
        ciio_channel_scan_format(channel, &format)
        return format
    }

    // MARK: Sampling frequency: a device attribute, or an in_accel_ one libiio files under the channels.

    enum RateAttribute {
        case device
        case channel(OpaquePointer)
    }

    static func rateAttribute(of device: IIODevice) -> RateAttribute? {
        if device.hasAttribute("sampling_frequency") { return .device }
        if let x = device.inputChannel("accel_x"), device.channelHasAttribute(x, "sampling_frequency") {
            return .channel(x)
        }
        return nil
    }

    static func read(_ device: IIODevice, _ at: RateAttribute, _ name: String) throws -> String {
        switch at {
        case .device: return try device.readAttribute(name)
        case .channel(let c): return try device.readAttribute(name, of: c)
        }
    }

    static func write(_ device: IIODevice, _ at: RateAttribute, _ name: String, _ value: String) throws {
        switch at {
        case .device: try device.writeAttribute(name, value)
        case .channel(let c): try device.writeAttribute(name, of: c, value)
        }
    }

    static func availableRates(of device: IIODevice, at: RateAttribute) -> [Double] {
        guard let text = try? read(device, at, "sampling_frequency_available") else { return [] }
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Double($0) }.sorted()
    }

    /// The smallest rate >= 60 Hz (the pipeline's rate, so nothing is lost and little is wasted), else the highest.
    public static func chooseRate(from available: [Double], pipelineRateHz: Double = 60) -> Double? {
        available.filter { $0 >= pipelineRateHz }.min() ?? available.max()
    }

    /// How the rate was chosen, for the debug log: "sampling_frequency_available 25 50 62.5 100 200 Hz:
    /// the smallest >= 60 Hz".
    static func rateChoiceText(of device: IIODevice, pipelineRateHz: Double) -> String {
        guard let at = rateAttribute(of: device) else { return "no sampling_frequency attribute" }
        let available = availableRates(of: device, at: at)
        guard !available.isEmpty else { return "no sampling_frequency_available: the driver's rate kept" }
        let rule = available.contains { $0 >= pipelineRateHz } ? "the smallest >= \(format(pipelineRateHz)) Hz"
            : "the highest, all are below \(format(pipelineRateHz)) Hz"
        return "sampling_frequency_available \(available.map(format).joined(separator: " ")) Hz: \(rule)"
    }

    static func format(_ hz: Double) -> String {
        hz == hz.rounded() && abs(hz) < 1e9 ? String(Int(hz)) : String(hz)
    }

    /// Picks the rate from sampling_frequency_available and writes it; returns the rate the device then
    /// reports, or nil when the device has no sampling_frequency.
    static func configureRate(of device: IIODevice, pipelineRateHz: Double) throws -> Double? {
        guard let at = rateAttribute(of: device) else { return nil }
        if let chosen = chooseRate(from: availableRates(of: device, at: at), pipelineRateHz: pipelineRateHz) {
            // A refused write (read-only attribute, a driver that rejects the value) leaves the current rate.
            try? write(device, at, "sampling_frequency", chosen == chosen.rounded() ? String(Int(chosen)) : String(chosen))
        }
        let text = try read(device, at, "sampling_frequency")
        guard let rate = Double(text), rate > 0, rate.isFinite else {
            throw IIOError.badAttribute(device: device.displayName, attribute: "sampling_frequency", value: text,
                                        reason: "not a positive rate")
        }
        return rate
    }

    // MARK: Mount matrix

    static func mountMatrixText(of device: IIODevice) -> String? {
        if let x = device.inputChannel("accel_x"), device.channelHasAttribute(x, "mount_matrix") {
            return try? device.readAttribute("mount_matrix", of: x)
        }
        for name in ["in_accel_mount_matrix", "mount_matrix"] where device.hasAttribute(name) {
            return try? device.readAttribute(name)
        }
        return nil
    }

    static func mountMatrix(of device: IIODevice) throws -> MountMatrix {
        guard let text = mountMatrixText(of: device) else { return .identity }
        do { return try MountMatrix(parsing: text) } catch {
            throw IIOError.badAttribute(device: device.displayName, attribute: "mount_matrix", value: text,
                                        reason: "\(error)")
        }
    }

    // MARK: Trigger

    static func currentTrigger(of device: IIODevice) -> String? {
        var trigger: OpaquePointer?
        let result = iio_device_get_trigger(device.pointer, &trigger)
        guard result == 0 else { return nil }
        return trigger.map { IIODevice(context: device.context, pointer: $0).name ?? "?" } ?? "none assigned"
    }

    /// Whether the device has a trigger/current_trigger file at all (triggered buffer drivers).
    static func usesTrigger(_ device: IIODevice) -> Bool {
        var trigger: OpaquePointer?
        let result = iio_device_get_trigger(device.pointer, &trigger)
        return result == 0 || result == -ENXIO
    }

    /// The trigger a driver registers for its own device: "<name>-dev<N>" (iio_trigger_alloc's usual name),
    /// else one whose name starts with "<name>-" (e.g. st_sensors' "<name>-trigger").
    static func ownTrigger(of device: IIODevice) -> IIODevice? {
        guard let name = device.name else { return nil }
        let number = device.id.hasPrefix("iio:device") ? String(device.id.dropFirst("iio:device".count)) : ""
        let triggers = device.context.devices.filter(\.isTrigger)
        return triggers.first { $0.name == "\(name)-dev\(number)" }
            ?? triggers.first { $0.name?.hasPrefix("\(name)-") ?? false }
    }

    // MARK: Hardware step counter (Documentation/ABI/testing/sysfs-bus-iio: in_steps_input, in_steps_en)

    static func stepCounter(of device: IIODevice) -> OpaquePointer? {
        guard let steps = device.inputChannel("steps"), device.channelHasAttribute(steps, "input") else { return nil }
        return steps
    }
}
