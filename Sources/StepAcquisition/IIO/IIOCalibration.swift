import CIIO
import Foundation
import StepProcessing

/// Raw counts to m/s^2 in the board's axes: value = (raw + offset) * scale per axis (sysfs-bus-iio's
/// in_accel_*_scale / _offset), then the mount matrix; glitches are dropped before they reach the pipeline.
struct IIOCalibration {
    var scales: [Double]
    var offsets: [Double]
    var mountMatrix: MountMatrix
    var validator: SampleValidator

    /// Reads scale and offset per axis (libiio files a shared in_accel_scale under each channel too).
    init(device: IIODevice, channels: [OpaquePointer], fullScaleCounts: Double?) throws {
        scales = []
        offsets = []
        for channel in channels {
            let text = try device.readAttribute("scale", of: channel)
            guard let scale = Double(text), scale > 0, scale.isFinite else {
                throw IIOError.badAttribute(device: device.displayName, attribute: "in_accel_scale", value: text,
                                            reason: "not a positive number")
            }
            scales.append(scale)
            var offset = 0.0
            if device.channelHasAttribute(channel, "offset") {
                let offsetText = try device.readAttribute("offset", of: channel)
                guard let value = Double(offsetText), value.isFinite else {
                    throw IIOError.badAttribute(device: device.displayName, attribute: "in_accel_offset",
                                                value: offsetText, reason: "not a number")
                }
                offset = value
            }
            offsets.append(offset)
        }
        mountMatrix = try IIODiscovery.mountMatrix(of: device)
        // The rail: the largest count the format holds, in m/s^2 on the least sensitive axis.
        let axisScales = scales
        let fullScale = fullScaleCounts.map { counts in axisScales.map { counts * $0 }.max() ?? 0 }
        validator = SampleValidator(fullScaleMetersPerSecondSquared: fullScale)
    }

    /// The board-axes sample, or nil for a glitch (the validator counts it).
    mutating func sample(time: Double, raw: (Int64, Int64, Int64)) -> Sample? {
        let chip = Vector3(x: (Double(raw.0) + offsets[0]) * scales[0],
                           y: (Double(raw.1) + offsets[1]) * scales[1],
                           z: (Double(raw.2) + offsets[2]) * scales[2])
        // Validate in the chip's axes, where the rail is per axis.
        let verdict = validator.check(Sample(time: time, acceleration: chip))
        guard verdict == .valid else { return nil }
        return Sample(time: time, acceleration: mountMatrix.apply(chip))
    }

    /// The largest count a scan format holds, before offset: 2^(bits-1)-1 signed, 2^bits-1 unsigned.
    static func fullScaleCounts(_ format: ciio_scan_format) -> Double? {
        guard format.bits > 1, format.bits <= 64 else { return nil }
        return format.is_signed ? pow(2, Double(format.bits - 1)) - 1 : pow(2, Double(format.bits)) - 1
    }
}
