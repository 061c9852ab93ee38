import CIIO
import Foundation
import Glibc
import Logging
import StepProcessing
import Timekeeping

/// An IIO pressure sensor, read a few times a second: a barometer has no need of a buffer, and most drivers
/// (bmp280, ms5611, dps310) read the chip on each read of `in_pressure_input`. While an accelerometer refills its
/// buffer, the reads are made on the accelerometer's thread after each refill (IIOReadAlong: no wake-up of their
/// own); else on a thread of its own at `rateHz`.
/// Waiting for a device, the states and the retries are the shared loop's (IIOSensorLoop), as the
/// accelerometer's: `waiting` with none present (woken by the device watcher), `busy` while another reader holds
/// its buffer (reads answer EBUSY), `disconnected` when it goes away mid-stream, `running` again when it returns.
public final class IIOBarometerSource: Sendable {
    public let uri: String
    public let selector: String?
    /// Readings a second on its own thread, and at most this many in the accelerometer's refills. 4 Hz: a 6 s
    /// spike-rejecting median has 24 of them, and bmp280-class chips settle a reading in 5-40 ms (their
    /// datasheets' measurement times), so the bus is idle most of the time.
    public let rateHz: Double
    public static let defaultRateHz = 4.0

    private let logger: Logger
    private let thread = SourceThread(name: "stepd.barometer")
    /// Where the accelerometer's thread takes the reads over while it refills.
    private let readAlong: IIOReadAlong
    /// What was found at start, for the banner and debug log.
    public let initialDescription: String?

    public convenience init(uri: String = "local:", selector: String? = nil, rateHz: Double = defaultRateHz,
                            logger: Logger = Logger(label: "stepd.barometer")) {
        self.init(uri: uri, selector: selector, rateHz: rateHz, logger: logger, readAlong: .shared)
    }

    init(uri: String, selector: String?, rateHz: Double, logger: Logger, readAlong: IIOReadAlong) {
        self.readAlong = readAlong
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
                    try poll(device, name: found.displayName, sink: sink)
                }
        }
    }

    /// Returns once the reading thread has ended, or after SourceThread's time-out with a warning.
    public func stop() { thread.stop(logger: logger, "iio barometer") }

    /// Reads the device until it fails or the source stops: after a first reading of its own, in the
    /// accelerometer's wake-ups while one refills (IIOReadAlong), else on this thread at `rateHz`.
    private func poll(_ device: IIODevice, name: String, sink: BarometerSink) throws {
        guard let channel = IIOBarometerDiscovery.pressureChannel(of: device) else { throw IIOError.disconnected(device: device.displayName) }
        let reader = try PressureReader(device: device, channel: channel)
        try configureRate(of: device)
        logger.debug("\(name): barometer read at up to \(IIODiscovery.format(rateHz)) Hz through \(reader.source)")
        var running = false
        // A read too slow for the accelerometer's thread: this device is read here from then on.
        var alone = false
        var announced = rateHz
        func announce(_ rate: Double) {
            guard rate != announced else { return }
            announced = rate
            sink.barometerIdentified(kind: "iio", description: name, rateHz: rate)
        }
        let period = 1 / rateHz
        var next = IIOTimeline.monotonicSeconds()
        while !thread.isStopped {
            if running, !alone, let pace = readAlong.paceHz {
                announce(min(rateHz, pace))
                logger.trace("\(name): read in the accelerometer's refills, \(IIODiscovery.format(pace)) a second")
                let generation = readAlong.lead(listener: thread, minimumInterval: period) {
                    sink.receive(pressure: PressureReading(time: IIOTimeline.monotonicSeconds(), kilopascal: try reader.read()))
                }
                let stopped = thread.wait(seconds: .infinity) { readAlong.generation != generation }
                let outcome = readAlong.release()
                if let fault = outcome.fault { throw fault }
                if outcome.slow {
                    alone = true
                    logger.notice("\(name): a read took over \(IIOReadAlong.slowReadSeconds) s; read on its own thread at \(IIODiscovery.format(rateHz)) Hz, not to hold the accelerometer up")
                }
                if stopped { return }
                next = IIOTimeline.monotonicSeconds()
                continue
            }
            let now = IIOTimeline.monotonicSeconds()
            let kilopascal = try reader.read()
            if !running {
                running = true
                sink.barometerStateChanged(.running)
            }
            sink.receive(pressure: PressureReading(time: now, kilopascal: kilopascal))
            announce(rateHz)
            next += period
            if next < now { next = now + period }
            // Woken early when an accelerometer starts refilling: then it carries the reads.
            let generation = readAlong.generation
            if thread.wait(seconds: next - IIOTimeline.monotonicSeconds(), or: { !alone && readAlong.generation != generation }) { return }
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
/// Used by one thread at a time: the barometer's, or the accelerometer's under IIOReadAlong's lock while the
/// barometer's thread waits (and cannot free the device: taking the read back waits for that lock).
// unchecked: libiio's channel and context are not shared by two threads at once (above).
struct PressureReader: @unchecked Sendable {
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
