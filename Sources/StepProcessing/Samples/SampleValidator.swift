/// Rejects samples a sensor cannot have measured, before they reach the resampler, so a glitch never makes a step.
/// A bus glitch reads back all-zero (a real accelerometer always feels gravity); a value at or past the chip's
/// full-scale rail, or past 16 g (the widest common accelerometer range), is a transfer error or a saturated
/// reading whose true value is unknown; time must move forward. The resampler interpolates across a gap.
public struct SampleValidator: Sendable {
    public enum Verdict: Equatable, Sendable {
        case valid
        case allZero
        case outOfRange
        case notFinite
        case timeNotIncreasing
    }

    /// Per-axis limit in m/s^2: the chip's full scale when known, else 16 g.
    public let limitMetersPerSecondSquared: Double
    private var lastTime: Double?
    public private(set) var rejected = 0

    public static let widestRangeMetersPerSecondSquared = 16 * standardGravity

    /// `fullScaleMetersPerSecondSquared`: the largest magnitude the chip's raw counts can express on an axis.
    public init(fullScaleMetersPerSecondSquared: Double? = nil) {
        let widest = Self.widestRangeMetersPerSecondSquared
        if let fullScale = fullScaleMetersPerSecondSquared, fullScale > 0, fullScale.isFinite {
            limitMetersPerSecondSquared = min(fullScale, widest)
        } else {
            limitMetersPerSecondSquared = widest
        }
    }

    /// The verdict on one acceleration, without time.
    public func check(_ a: Vector3) -> Verdict {
        guard a.x.isFinite, a.y.isFinite, a.z.isFinite else { return .notFinite }
        if a.x == 0 && a.y == 0 && a.z == 0 { return .allZero }
        let limit = limitMetersPerSecondSquared
        if abs(a.x) >= limit || abs(a.y) >= limit || abs(a.z) >= limit { return .outOfRange }
        return .valid
    }

    /// The verdict on a sample in a stream; a valid sample advances the stream's clock.
    public mutating func check(_ sample: Sample) -> Verdict {
        var verdict = check(sample.acceleration)
        if verdict == .valid, let last = lastTime, !(sample.time > last) { verdict = .timeNotIncreasing }
        if verdict == .valid { lastTime = sample.time } else { rejected += 1 }
        return verdict
    }

    /// The valid samples of a batch, in order.
    public mutating func filter(_ samples: [Sample]) -> [Sample] {
        samples.filter { check($0) == .valid }
    }
}

/// What no accelerometer measures, whatever the source (a replayed file, a sensor, a fault): a value that is
/// not a number, or beyond 50 g on an axis or in norm. The widest consumer accelerometers stop at ±16 g
/// (±32 g for a few impact sensors), so 50 g leaves every real reading alone; one such value fed to a filter
/// would make its state infinite or NaN for good (one 1e300 sample stopped counting for a whole recording).
/// The pipeline drops these before the resampler and counts them.
public enum SamplePlausibility {
    public static let limitMetersPerSecondSquared = 50 * standardGravity

    @inlinable
    public static func isPlausible(_ sample: Sample) -> Bool {
        let a = sample.acceleration, limit = limitMetersPerSecondSquared
        // Written so that NaN fails every comparison: no `!(x > limit)`.
        guard sample.time.isFinite, abs(a.x) <= limit, abs(a.y) <= limit, abs(a.z) <= limit else { return false }
        return a.x * a.x + a.y * a.y + a.z * a.z <= limit * limit
    }
}
