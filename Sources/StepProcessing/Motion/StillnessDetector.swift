/// Whether the device lies still: what lets a buffered source batch slowly (docs/iio.md, "What it costs a
/// wearable"). Pure logic over the samples, on the samples' own clock.
///
/// The samples are cut into one-second blocks; a block is quiet when every axis's standard deviation in it is
/// under `quietStandardDeviation`. The device is still once the quiet blocks have lasted `quietSecondsToBeStill`
/// and the block under way is quiet so far; any block with motion ends it at once.
/// - The threshold, 0.1 m/s^2 (10 mg), is ten times an accelerometer's noise at these rates (BMI160: 180 ug/sqrt(Hz)
///   over a 31 Hz band = 1.0 mg per axis; ADXL345-class parts about 4 mg) and five to twenty times under walking's
///   (the vertical acceleration of even a slow walk varies by 0.5-2 m/s^2 about its mean at 1.5-2 steps a second).
///   A device resting on a table or on a sitting wearer's wrist stays under it; a gesture, a shuffle or a step
///   goes over it, so the doubt is always resolved towards the walking rate.
/// - Four seconds: longer than ActivityTracker's 2.5 s pause, so a walk has ended in the samples before the source
///   batches slowly, and longer than a step's period by far (a standing pause between two steps is not stillness).
/// A gait never passes for stillness: each step moves the device by far more than the threshold.
public struct StillnessDetector: Sendable {
    public static let blockSeconds = 1.0
    public static let quietStandardDeviation = 0.1
    public static let quietSecondsToBeStill = 4.0

    /// Per-axis sums of one block, taken about its first sample (no cancellation at 9.8 m/s^2).
    private struct Block {
        var start: Double
        var origin: Vector3
        var count = 0
        var sum = Vector3.zero
        var squares = Vector3.zero

        init(start: Double, origin: Vector3) {
            self.start = start
            self.origin = origin
        }

        mutating func add(_ a: Vector3) {
            let d = a - origin
            count += 1
            sum = sum + d
            squares = squares + Vector3(x: d.x * d.x, y: d.y * d.y, z: d.z * d.z)
        }

        /// True while every axis varies less than the threshold. Under 10 samples (the first 0.16 s of a block at
        /// 62.5 Hz) the estimate is too loose (two samples of pure noise pass 0.1 m/s^2 once in a hundred): only
        /// five times the threshold (motion at once, 12 times the noise of the noisiest part above) counts then.
        var isQuiet: Bool {
            guard count >= 2 else { return true }
            let n = Double(count)
            let deviation = StillnessDetector.quietStandardDeviation * (count < 10 ? 5 : 1)
            let limit = deviation * deviation
            for (s, q) in [(sum.x, squares.x), (sum.y, squares.y), (sum.z, squares.z)] {
                let variance = (q - s * s / n) / (n - 1)
                if !(variance < limit) { return false }
            }
            return true
        }
    }

    private var block: Block?
    /// Where the run of quiet blocks began; nil after a block with motion.
    private var quietSince: Double?
    private var lastTime = -Double.infinity

    public init() {}

    /// Still: quiet for `quietSecondsToBeStill` up to the last sample added, the block under way included.
    public var isStill: Bool {
        guard let quietSince, let block, block.isQuiet else { return false }
        return lastTime - quietSince >= Self.quietSecondsToBeStill
    }

    public mutating func add(_ samples: [Sample]) {
        for sample in samples { add(sample) }
    }

    public mutating func add(_ sample: Sample) {
        let a = sample.acceleration
        guard sample.time.isFinite, a.x.isFinite, a.y.isFinite, a.z.isFinite, sample.time > lastTime else { return }
        if var current = block, sample.time - current.start < Self.blockSeconds {
            current.add(a)
            block = current
        } else {
            if let finished = block { close(finished, next: sample.time) }
            var fresh = Block(start: sample.time, origin: a)
            fresh.add(a)
            block = fresh
        }
        lastTime = sample.time
        // Motion in the block under way ends stillness now, not when the block closes.
        if let block, !block.isQuiet { quietSince = nil }
    }

    private mutating func close(_ finished: Block, next: Double) {
        // A gap of more than a block (a source that stopped) says nothing of what happened meanwhile.
        let gap = next - lastTime > Self.blockSeconds
        quietSince = finished.isQuiet && !gap ? quietSince ?? finished.start : nil
    }
}
