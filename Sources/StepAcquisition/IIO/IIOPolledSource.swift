import CIIO
import Foundation
import Glibc
import Logging
import StepProcessing

/// Polled capture for a device without buffer support: read in_accel_{x,y,z}_raw on a 60 Hz timer and hand
/// the samples over in batches (a few a second), stamped with the monotonic clock at the read.
struct IIOPolledSource {
    let device: IIODevice
    let rateHz: Double
    let logger: Logger
    /// Batches handed to the pipeline per second: the processing queue wakes this often, not per sample.
    static let batchesPerSecond = 4.0

    func run(sink: SampleSink, stop: SourceThread, hardwareSteps: IIOStepCounter?) throws {
        let name = device.displayName
        guard let axes = IIODiscovery.accelerationChannels(of: device) else { throw IIOError.disconnected(device: name) }
        // The chip's own output rate: at least the polling rate, so every read sees a fresh value.
        let chipRate = try IIODiscovery.configureRate(of: device, pipelineRateHz: rateHz)
        let chipText = chipRate.map {
            "the chip runs at \(IIODiscovery.format($0)) Hz (\(IIODiscovery.rateChoiceText(of: device, pipelineRateHz: rateHz)))"
        } ?? "the chip has no sampling_frequency"
        logger.debug("\(name): polled capture (no buffer support): in_accel_*_raw read at \(IIODiscovery.format(rateHz)) Hz; \(chipText)")
        var calibration = try IIOCalibration(device: device, channels: axes, fullScaleCounts: nil)
        hardwareSteps?.enable()
        let period = 1 / rateHz
        let batchSize = max(1, Int((rateHz / Self.batchesPerSecond).rounded(.up)))
        var batch: [Sample] = []
        batch.reserveCapacity(batchSize)
        var running = false
        var reportedRejections = 0
        var next = IIOTimeline.monotonicSeconds()
        while !stop.isStopped {
            let now = IIOTimeline.monotonicSeconds()
            var raw: [Int64] = []
            for channel in axes {
                guard let text = try? device.readAttribute("raw", of: channel), let value = Int64(text) else { break }
                raw.append(value)
            }
            guard raw.count == 3 else {
                if !device.isPresent { throw IIOError.disconnected(device: name) }
                throw IIOError.attributeFailed(device: name, attribute: "in_accel_*_raw", reason: "unreadable")
            }
            if let sample = calibration.sample(time: now, raw: (raw[0], raw[1], raw[2])) { batch.append(sample) }
            if batch.count >= batchSize {
                if !running {
                    running = true
                    sink.sourceStateChanged(.running)
                }
                sink.receive(batch)
                batch.removeAll(keepingCapacity: true)
                if calibration.validator.rejected > reportedRejections {
                    sink.samplesRejected(calibration.validator.rejected - reportedRejections)
                    reportedRejections = calibration.validator.rejected
                }
                hardwareSteps?.poll(sink: sink, now: now)
            }
            // Absolute deadlines, so the rate does not drift with the time the reads take.
            next += period
            if next < now { next = now + period }
            if stop.wait(seconds: next - IIOTimeline.monotonicSeconds()) { return }
        }
    }
}
