import CIIO
import Foundation
import Glibc
import Logging
import StepProcessing

/// Buffered capture from one IIO accelerometer: the kernel fills a buffer at the sensor's own rate and
/// the acquisition thread blocks in iio_buffer_refill, a few times a second, never on the processing queue.
struct IIOBufferedSource {
    let device: IIODevice
    let pipelineRateHz: Double
    let logger: Logger
    /// Where the barometer's reads are made after each refill (IIOReadAlong), so that it wakes nothing of its own.
    var readAlong: IIOReadAlong? = .shared
    /// Refills a second: the buffer (and watermark) holds rate / this many scans. Each refill wakes this
    /// thread, which runs the batch on the processing queue itself, so 1.5 refills keep a walking daemon near
    /// 2 wake-ups a second (docs/iio.md, "What it costs a wearable") while a step still shows within 0.7 s.
    static let refillsPerSecond = 1.5
    /// While the device lies still (StillnessDetector) the buffer holds this long: one refill every 5 s, and
    /// the first batch with motion brings the walking buffer back. Steps are not late for it: a bout's first
    /// steps wait for its confirmation anyway, and the batch that ends stillness is delivered whole.
    static let stillBufferSeconds = 5.0
    /// The kernel's buffer holds at least this much beyond the refill being read: a reader held up this long (a
    /// starved thread on a busy board, a slow SD card's write holding the CPU) loses no scan. libiio makes it
    /// the refill's size times its kernel buffer count (4 by default: 2.7 s walking). At 100 Hz and 16 bytes a
    /// scan it costs 16 KB of kernel memory. Scans that come while it is full are lost, and counted
    /// (SampleGapCounter, STATUS `source.samples_lost`).
    static let starvedReaderSeconds = 10.0

    /// Runs until `stop` or a fault; throws the fault (busy, disconnected, ...). Reports `.running` once data flows.
    /// With `counterMode`, also returns (the buffer destroyed) when the sensor's own counter takes over.
    func run(sink: SampleSink, stop: SourceThread, hardwareSteps: IIOStepCounter?,
             counterMode: IIOStepCounterMode? = nil) throws {
        let name = device.displayName
        guard let axes = IIODiscovery.accelerationChannels(of: device) else { throw IIOError.disconnected(device: name) }
        let timestamp = device.inputChannel("timestamp").flatMap { IIODiscovery.scanFormat($0).is_scan_element ? $0 : nil }

        // Another reader (iio-sensor-proxy) leaves the buffer enabled while it streams; libiio would switch
        // it off under that reader, so leave it alone and say so.
        if (try? device.readBufferAttribute("enable")) == "1" {
            throw IIOError.deviceBusy(device: name, path: "/dev/\(device.id)")
        }

        let rateHz = try IIODiscovery.configureRate(of: device, pipelineRateHz: pipelineRateHz) ?? pipelineRateHz
        let clock = configureTimestampClock(hasTimestamp: timestamp != nil)
        try assignTrigger()

        for channel in device.channels { iio_channel_disable(channel) }
        for channel in axes { iio_channel_enable(channel) }
        if let timestamp { iio_channel_enable(timestamp) }

        let scans = max(1, Int((rateHz / Self.refillsPerSecond).rounded(.up)))
        let stillScans = max(scans, Int((rateHz * Self.stillBufferSeconds).rounded(.up)))
        let stamps = clock == .none ? "from the refill clock" : "from the device (\(clock))"
        let choice = IIODiscovery.rateChoiceText(of: device, pipelineRateHz: pipelineRateHz)
        logger.debug("\(name): buffered capture at \(IIODiscovery.format(rateHz)) Hz (\(choice)), \(scans) scans a refill (\(stillScans) while still), timestamps \(stamps)")

        var calibration = try IIOCalibration(device: device, channels: axes,
                                             fullScaleCounts: IIOCalibration.fullScaleCounts(IIODiscovery.scanFormat(axes[0])))
        hardwareSteps?.enable()
        var timeline = IIOTimeline(rateHz: rateHz, clock: clock)
        var stillness = StillnessDetector()
        var still = false
        var running = false
        var reportedRejections = 0
        var batch: [Sample] = []
        batch.reserveCapacity(stillScans)
        var lost = LostScans(name: name, rateHz: rateHz, sink: sink, logger: logger)

        // The device's stamps, one stream across the buffers made again: the scans a new buffer costs (those
        // still unread in the old one, and those captured while it is made again) are lost, and counted as the
        // stamps show them, as a buffer that overran is.
        var gaps = SampleGapCounter(rateHz: rateHz)
        var bufferLength = "?"
        defer { gaps.restart().map { lost.report($0, length: bufferLength) } }

        // One buffer of `size` scans, read until the source stops (true) or the stillness changes (false). libiio
        // fixes the watermark when it creates the buffer, and the kernel refuses a new one while the buffer is
        // enabled (EBUSY): a new batch size is a new buffer. The scans captured while it is made again are lost
        // (a few milliseconds, more on a busy board: STATUS counts them); the time stamps (or the refill clock)
        // keep the timeline true across the gap.
        // The barometer reads on its own thread again when this one stops refilling.
        defer { readAlong?.stopped() }
        func capture(scans size: Int) throws -> Bool {
            // A refill that takes four buffer periods, or one period and 2 s more, whichever is shorter (and
            // at least 2 s), means the device stalled or went away: 2.7 s walking, 7 s still. A vanished device
            // is often found this way (the kernel does not always wake a reader blocked in poll), so the still
            // buffer's 20 s of four periods would say an unplugged device was gone 20 s late.
            let period = Double(size) / rateHz
            let timeoutMs = UInt32(1000 * max(2, min(4 * period, period + 2)))
            device.context.setTimeout(milliseconds: timeoutMs)
            let kernelBuffers = max(4, Int((Self.starvedReaderSeconds * rateHz / Double(size)).rounded(.up)))
            _ = iio_device_set_kernel_buffers_count(device.pointer, UInt32(kernelBuffers))
            var error: Int32 = 0
            guard let buffer = ciio_device_create_buffer(device.pointer, size, &error) else {
                if error == EBUSY { throw IIOError.deviceBusy(device: name, path: "/dev/\(device.id)") }
                if error == EACCES || error == EPERM {
                    throw IIOError.notPermitted(device: name, what: "cannot open /dev/\(device.id)",
                                                reason: IIODevice.message(errno: error))
                }
                if !device.isPresent || error == ENODEV || error == ENOENT { throw IIOError.disconnected(device: name) }
                throw IIOError.bufferFailed(device: name, reason: "cannot create a buffer of \(size) scans: "
                                            + IIODevice.message(errno: error))
            }
            defer { iio_buffer_destroy(buffer) }
            let cancel = IIOBufferCancel(buffer: buffer)
            let length = (try? device.readBufferAttribute("length")) ?? "?"
            logger.trace("\(name): a buffer of \(size) scans (kernel buffer/length \(length))")
            bufferLength = length
            while !stop.isStopped {
                let result = stop.whileBlocking(cancel: { cancel() }) { iio_buffer_refill(buffer) }
                if stop.isStopped { return true }
                if result < 0 {
                    if !device.isPresent || result == -ENODEV { throw IIOError.disconnected(device: name) }
                    if result == -ETIMEDOUT {
                        readAlong?.stopped()
                        sink.sourceStateChanged(.disconnected(reason: "\(name) sends no data (refill timed out); waiting"))
                        running = false
                        // The chip's own counter counts without the FIFO: its last steps are read while none comes.
                        hardwareSteps?.poll(sink: sink, now: IIOTimeline.monotonicSeconds())
                        continue
                    }
                    throw IIOError.bufferFailed(device: name, reason: IIODevice.message(errno: Int32(-result)))
                }
                let refillTime = IIOTimeline.monotonicSeconds()
                let step = iio_buffer_step(buffer)
                func first(_ channel: OpaquePointer) -> UnsafeRawPointer? { iio_buffer_first(buffer, channel).map(UnsafeRawPointer.init) }
                guard var px = first(axes[0]), var py = first(axes[1]), var pz = first(axes[2]),
                      let end = iio_buffer_end(buffer).map(UnsafeRawPointer.init), step > 0 else { continue }
                var pt = timestamp.flatMap(first)
                let count = (end - px) / step
                batch.removeAll(keepingCapacity: true)
                for i in 0..<count {
                    let nanoseconds = pt.map { ciio_channel_convert_integer(timestamp!, $0) }
                    let time = timeline.time(ofScan: i, of: count, refilledAt: refillTime, timestampNanoseconds: nanoseconds)
                    // Only the device's own stamps show a gap: the refill clock spaces the scans evenly.
                    if nanoseconds != nil, clock != .none, let loss = gaps.add(time: time) {
                        lost.report(loss, length: bufferLength)
                    }
                    let raw = (ciio_channel_convert_integer(axes[0], px), ciio_channel_convert_integer(axes[1], py),
                               ciio_channel_convert_integer(axes[2], pz))
                    if let sample = calibration.sample(time: time, raw: raw) { batch.append(sample) }
                    px += step; py += step; pz += step
                    pt = pt.map { $0 + step }
                }
                if !running {
                    running = true
                    sink.sourceStateChanged(.running)
                }
                // Before the batch, so that the reading waits in the engine's inbox for it (no wake-up of its own).
                readAlong?.refilled(paceHz: rateHz / Double(size), now: refillTime)
                if !batch.isEmpty { sink.receive(batch) }
                if calibration.validator.rejected > reportedRejections {
                    sink.samplesRejected(calibration.validator.rejected - reportedRejections)
                    reportedRejections = calibration.validator.rejected
                }
                hardwareSteps?.poll(sink: sink, now: refillTime)
                if let counterMode, counterMode.afterRefill(sink: sink, now: refillTime) { return true }
                stillness.add(batch)
                if stillness.isStill != still { return false }
            }
            return true
        }

        while try !capture(scans: still ? stillScans : scans) {
            still.toggle()
            logger.debug("\(name): \(still ? "still: \(stillScans)" : "moving: \(scans)") scans a refill")
        }
    }

    /// Asks for monotonic timestamps (the kernel's default is realtime, which jumps with the wall clock).
    private func configureTimestampClock(hasTimestamp: Bool) -> IIOTimeline.Clock {
        guard hasTimestamp else { return .none }
        guard device.hasAttribute("current_timestamp_clock") else { return .realtime }
        try? device.writeAttribute("current_timestamp_clock", "monotonic")
        let clock = (try? device.readAttribute("current_timestamp_clock")) ?? "realtime"
        return clock == "monotonic" || clock == "monotonic_raw" || clock == "boottime" ? .monotonic : .realtime
    }

    /// A triggered-buffer driver needs a trigger before the buffer is created; give it its own.
    private func assignTrigger() throws {
        guard IIODiscovery.usesTrigger(device) else { return }
        var current: OpaquePointer?
        if iio_device_get_trigger(device.pointer, &current) == 0, current != nil { return }
        guard let own = IIODiscovery.ownTrigger(of: device) else {
            throw IIOError.bufferFailed(device: device.displayName,
                                        reason: "it needs a trigger and none named '\(device.name ?? "")-dev…' exists")
        }
        let result = iio_device_set_trigger(device.pointer, own.pointer)
        if result < 0 {
            throw IIOError.accessFailed(device: device.displayName, attribute: "trigger/current_trigger", errno: -result)
        }
    }
}

/// The scans an overrun buffer lost, handed to the sink as each gap settles and logged at most once a minute
/// with what was lost since the line before (a buffer that overruns again and again says so without a flood).
struct LostScans {
    let name: String
    let rateHz: Double
    let sink: SampleSink
    let logger: Logger
    private var unlogged = 0
    private var lastLogged = -Double.infinity

    init(name: String, rateHz: Double, sink: SampleSink, logger: Logger) {
        self.name = name
        self.rateHz = rateHz
        self.sink = sink
        self.logger = logger
    }

    mutating func report(_ loss: SampleGapCounter.Loss, length: String) {
        sink.samplesLost(loss.scans, from: loss.from, to: loss.to)
        unlogged += loss.scans
        let now = IIOTimeline.monotonicSeconds()
        guard now - lastLogged >= 60 else { return }
        let gap = String(format: "%.2f", loss.to - loss.from)
        logger.warning("\(name): \(unlogged) samples lost (gaps in the device's time stamps over \(gap) s): its kernel buffer of \(length) scans (\(IIODiscovery.format(rateHz)) Hz) overran while this reader was held up, or scans were lost while the buffer was made anew, or in the kernel")
        unlogged = 0
        lastLogged = now
    }
}

/// The one libiio call made from another thread than the source's: `stop()` cancels the refill the thread is
/// blocked in. iio_buffer_cancel is thread-safe (libiio's iio.h: "thread-safe, but not signal-safe"), and
/// SourceThread calls it only inside `whileBlocking`, under its lock, so never after the buffer is destroyed.
// unchecked: iio_buffer_cancel is libiio's thread-safe call; SourceThread's state lock keeps the buffer alive.
struct IIOBufferCancel: @unchecked Sendable {
    let buffer: OpaquePointer

    func callAsFunction() { iio_buffer_cancel(buffer) }
}

/// Sample times in seconds on the monotonic clock: from the timestamp channel when there is one, else
/// spaced by the rate back from the refill instant, chained across refills while they agree.
struct IIOTimeline {
    enum Clock { case none, monotonic, realtime }
    let rateHz: Double
    let clock: Clock
    private var last: Double?

    init(rateHz: Double, clock: Clock) {
        self.rateHz = rateHz
        self.clock = clock
    }

    static func monotonicSeconds() -> Double { seconds(CLOCK_MONOTONIC) }

    static func seconds(_ id: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(id, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    mutating func time(ofScan index: Int, of count: Int, refilledAt refill: Double, timestampNanoseconds: Int64?) -> Double {
        if let ns = timestampNanoseconds, clock != .none {
            let t = Double(ns) / 1e9
            // Realtime stamps: move them onto the monotonic clock with the offset measured now.
            let shifted = clock == .realtime ? t - (Self.seconds(CLOCK_REALTIME) - refill) : t
            last = shifted
            return shifted
        }
        let period = 1 / rateHz
        let fromRefill = refill - Double(count - 1 - index) * period
        let chained = (last ?? -Double.infinity) + period
        // Keep the even spacing while it stays within half a buffer of the refill clock; else resynchronise.
        let t = abs(chained - fromRefill) < 0.5 * Double(count) * period ? chained : fromRefill
        last = t
        return t
    }
}
