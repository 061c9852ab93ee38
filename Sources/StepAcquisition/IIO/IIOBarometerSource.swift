import CIIO
import Foundation
import Glibc
import Logging
import StepProcessing

/// An IIO pressure sensor, polled a few times a second on a thread of its own: a barometer has no need of
/// a buffer, and most drivers (bmp280, ms5611, dps310) read the chip on each read of `in_pressure_input`.
/// Waiting for a device, the states and the retries are the shared loop's (IIOSensorLoop), as the
/// accelerometer's: `waiting` with none present (woken by the device watcher), `busy` while another reader holds
/// its buffer (reads answer EBUSY), `disconnected` when it goes away mid-stream, `running` again when it returns.
public final class IIOBarometerSource: Sendable {
    public let uri: String
    public let selector: String?
    /// Readings a second. 4 Hz: a 6 s spike-rejecting median has 24 of them, and bmp280-class chips settle
    /// a reading in 5-40 ms (their datasheets' measurement times), so the bus is idle most of the time.
    public let rateHz: Double
    public static let defaultRateHz = 4.0

    private let logger: Logger
    private let thread = SourceThread(name: "stepd.barometer")
    /// What was found at start, for the banner and debug log.
    public let initialDescription: String?

    public init(uri: String = "local:", selector: String? = nil, rateHz: Double = defaultRateHz,
                logger: Logger = Logger(label: "stepd.barometer")) {
        self.uri = uri
        self.selector = selector
        self.rateHz = rateHz
        self.logger = logger
        initialDescription = (try? IIOBarometerDiscovery.find(uri: uri, selector: selector))?.1.displayName
    }

    /// What STATUS and the log name before the device is found: the selector, or "iio (first found)".
    public var description: String { initialDescription ?? selector.map { "iio \($0)" } ?? "iio (first found)" }

    public func start(sink: BarometerSink) {
        sink.barometerIdentified(kind: "iio", description: description, rateHz: rateHz)
        thread.start { [self] in
            IIOSensorLoop(rule: IIOBarometerDiscovery.Rule(), uri: uri, selector: selector, thread: thread, logger: logger)
                .run(report: sink.barometerStateChanged) { device, found in
                    sink.barometerIdentified(kind: "iio", description: found.displayName, rateHz: rateHz)
                    try poll(device, sink: sink)
                }
        }
    }

    /// Returns once the reading thread has ended, or after SourceThread's time-out with a warning.
    public func stop() { thread.stop(logger: logger, "iio barometer") }

    /// Reads the device at `rateHz` until it fails or the source stops.
    private func poll(_ device: IIODevice, sink: BarometerSink) throws {
        let name = device.displayName
        guard let channel = IIOBarometerDiscovery.pressureChannel(of: device) else { throw IIOError.disconnected(device: name) }
        let reader = try PressureReader(device: device, channel: channel)
        try configureRate(of: device)
        logger.debug("\(name): barometer polled at \(IIODiscovery.format(rateHz)) Hz through \(reader.source)")
        var running = false
        let period = 1 / rateHz
        var next = IIOTimeline.monotonicSeconds()
        while !thread.isStopped {
            let now = IIOTimeline.monotonicSeconds()
            let kilopascal = try reader.read()
            if !running {
                running = true
                sink.barometerStateChanged(.running)
            }
            sink.receive(pressure: PressureReading(time: now, kilopascal: kilopascal))
            next += period
            if next < now { next = now + period }
            if thread.wait(seconds: next - IIOTimeline.monotonicSeconds()) { return }
        }
    }

    /// A chip with sampling_frequency runs at the smallest rate at least the polling rate, so that each
    /// read sees a fresh value; one without (bmp280 in one-shot mode) measures on each read.
    private func configureRate(of device: IIODevice) throws {
        guard let at = IIOBarometerDiscovery.rateAttribute(of: device) else { return }
        let available = IIODiscovery.availableRates(of: device, at: at)
        if let chosen = IIODiscovery.chooseRate(from: available, pipelineRateHz: rateHz) {
            try? IIODiscovery.write(device, at, "sampling_frequency", IIODiscovery.format(chosen))
        }
    }
}

/// Reads one pressure in kPa: the processed `in_pressure_input`, or (raw + offset) × scale (the IIO ABI).
struct PressureReader {
    let device: IIODevice
    let channel: OpaquePointer
    let processed: Bool
    let scale: Double
    let offset: Double
    var source: String { processed ? "in_pressure_input" : "in_pressure_raw" }

    init(device: IIODevice, channel: OpaquePointer) throws {
        self.device = device
        self.channel = channel
        processed = device.channelHasAttribute(channel, "input")
        if processed {
            scale = 1
            offset = 0
        } else {
            scale = try Self.number(device, channel, "scale", default: 1)
            offset = try Self.number(device, channel, "offset", default: 0)
        }
    }

    private static func number(_ device: IIODevice, _ channel: OpaquePointer, _ name: String, default value: Double) throws -> Double {
        guard device.channelHasAttribute(channel, name) else { return value }
        let text = try device.readAttribute(name, of: channel)
        guard let number = Double(text), number.isFinite else {
            throw IIOError.badAttribute(device: device.displayName, attribute: "in_pressure_\(name)", value: text,
                                        reason: "not a number")
        }
        return number
    }

    /// One reading; EBUSY (a buffer enabled by another reader) is `busy`, a vanished device `disconnected`.
    func read() throws -> Double {
        var buffer = [CChar](repeating: 0, count: 64)
        let result = iio_channel_attr_read(channel, processed ? "input" : "raw", &buffer, buffer.count)
        let name = device.displayName
        if result < 0 {
            let code = Int32(-result)
            if code == EBUSY { throw IIOError.deviceBusy(device: name, path: "\(device.id)/\(source) (its buffer is enabled)") }
            if !device.isPresent || code == ENODEV || code == ENOENT { throw IIOError.disconnected(device: name) }
            throw IIOError.attributeFailed(device: name, attribute: source, reason: IIODevice.message(errno: code))
        }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let value = Double(text), value.isFinite else {
            throw IIOError.badAttribute(device: name, attribute: source, value: text, reason: "not a number")
        }
        return processed ? value : (value + offset) * scale
    }
}
