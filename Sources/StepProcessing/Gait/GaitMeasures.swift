import Foundation

/// What one walking bout says of the gait, beside its steps and cadence (`ActivityBout`). Each is nil where
/// it is not given: too few strides, a signal with gaps, a placement without the body's vertical motion.
public struct GaitMeasures: Equatable, Sendable {
    /// The median of the bout's stride times (a step's instant to the same foot's next: every second step).
    public var strideTimeSeconds: Double?
    /// The strides' coefficient of variation, standard deviation over mean (stride to stride).
    public var strideTimeCV: Double?
    /// Step regularity: the unbiased autocorrelation of the vertical acceleration at the step lag (1: every
    /// step alike), Moe-Nilssen & Helbostad, J Biomech 2004; 37:121-6.
    public var regularity: Double?
    /// Step symmetry: step regularity over stride regularity (the autocorrelation at the stride lag); 1 when
    /// left and right steps are alike.
    public var symmetry: Double?
    /// Mean step length and walking speed from the inverted pendulum (Zijlstra & Hof, Gait Posture 2003;
    /// 18:1-10); only at the waist or lower back.
    public var stepLengthMeters: Double?
    public var speedMetersPerSecond: Double?
    /// The steps the pendulum measured, for a per-step output (`stepd analyze --format steps`); not sent on
    /// the socket.
    public var pendulumSteps: [PendulumStep] = []

    public init(strideTimeSeconds: Double? = nil, strideTimeCV: Double? = nil, regularity: Double? = nil,
                symmetry: Double? = nil, stepLengthMeters: Double? = nil, speedMetersPerSecond: Double? = nil) {
        self.strideTimeSeconds = strideTimeSeconds
        self.strideTimeCV = strideTimeCV
        self.regularity = regularity
        self.symmetry = symmetry
        self.stepLengthMeters = stepLengthMeters
        self.speedMetersPerSecond = speedMetersPerSecond
    }
}

extension GaitMeasures {
    /// The measures as every output gives them (BOUT, history, bouts.csv, MQTT): stride time, its CV,
    /// regularity and symmetry to 0.001, length and speed to 0.01, so that they compare equal everywhere.
    public func rounded() -> GaitMeasures {
        func round(_ value: Double?, _ scale: Double) -> Double? {
            guard let value, value.isFinite else { return nil }
            return (value * scale).rounded() / scale
        }
        var copy = self
        copy.strideTimeSeconds = round(strideTimeSeconds, 1000)
        copy.strideTimeCV = round(strideTimeCV, 1000)
        copy.regularity = round(regularity, 1000)
        copy.symmetry = round(symmetry, 1000)
        copy.stepLengthMeters = round(stepLengthMeters, 100)
        copy.speedMetersPerSecond = round(speedMetersPerSecond, 100)
        return copy
    }
}

/// One step measured by the inverted pendulum: from one step instant to the next.
public struct PendulumStep: Equatable, Sendable {
    public var start: Double
    public var end: Double
    public var excursionMeters: Double
    public var lengthMeters: Double

    public init(start: Double, end: Double, excursionMeters: Double, lengthMeters: Double) {
        self.start = start
        self.end = end
        self.excursionMeters = excursionMeters
        self.lengthMeters = lengthMeters
    }
}

/// A walking bout with its gait measures: what the daemon's BOUT event, the history and `stepd analyze`'s
/// bouts.csv say of it.
public struct GaitBout: Equatable, Sendable {
    public var bout: ActivityBout
    public var gait: GaitMeasures

    public init(bout: ActivityBout, gait: GaitMeasures) {
        self.bout = bout
        self.gait = gait
    }
}

/// The arithmetic of the gait measures, on plain arrays: pure and tested on its own (GaitMeasuresTests).
public enum GaitMath {
    /// Stride times of consecutive steps (`times[i + 2] - times[i]`), leaving out those that span a step
    /// longer than `maximumStepSeconds` (a pause inside the bout is no stride). Returns the median and the
    /// coefficient of variation; nil with fewer than `minimumStrides`.
    public static func strideStatistics(stepTimes times: [Double], maximumStepSeconds: Double,
                                        minimumStrides: Int = 3) -> (median: Double, cv: Double)? {
        guard times.count >= 3 else { return nil }
        var strides: [Double] = []
        strides.reserveCapacity(times.count)
        for i in 0..<(times.count - 2) {
            let a = times[i + 1] - times[i], b = times[i + 2] - times[i + 1]
            if a > 0, b > 0, a <= maximumStepSeconds, b <= maximumStepSeconds { strides.append(a + b) }
        }
        guard strides.count >= max(1, minimumStrides) else { return nil }
        let mean = strides.reduce(0, +) / Double(strides.count)
        let variance = strides.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(max(1, strides.count - 1))
        return (median(&strides), variance.squareRoot() / mean)
    }

    /// The unbiased autocorrelation of `x` at `lag` samples, normalised by its value at lag 0 (Moe-Nilssen &
    /// Helbostad 2004): (1/(N−m)) Σ x[i]·x[i+m] over (1/N) Σ x[i]². `x` has its mean removed by the caller;
    /// `segments` are the start indices of contiguous stretches (a gap in the samples is not paired across).
    public static func autocorrelation(_ x: [Double], segments: [Int], lag: Int) -> Double? {
        guard lag > 0 else { return 1 }
        return autocorrelation(x, segments: segments, lag: lag, energy: energy(x, segments: segments))
    }

    /// Σ x[i]², summed segment by segment in index order: the same double for every lag, so a search over lags
    /// sums it once (`stepd analyze` spends a tenth of its time here otherwise).
    private static func energy(_ x: [Double], segments: [Int]) -> Double {
        x.withUnsafeBufferPointer { x in
            var energy = 0.0
            for (k, start) in segments.enumerated() {
                let end = k + 1 < segments.count ? segments[k + 1] : x.count
                for i in start..<end { energy += x[i] * x[i] }
            }
            return energy
        }
    }

    private static func autocorrelation(_ x: [Double], segments: [Int], lag: Int, energy: Double) -> Double? {
        x.withUnsafeBufferPointer { x in
            var products = 0.0, pairs = 0
            for (k, start) in segments.enumerated() {
                let end = k + 1 < segments.count ? segments[k + 1] : x.count
                if end - start > lag {
                    for i in start..<(end - lag) { products += x[i] * x[i + lag] }
                    pairs += end - start - lag
                }
            }
            guard energy > 0, pairs > 0 else { return nil }
            return (products / Double(pairs)) / (energy / Double(x.count))
        }
    }

    /// The highest autocorrelation over lags `range` (samples), and its lag. Four lags are summed in one pass
    /// over the signal (four independent sums keep the processor busy where one waits on each addition); each
    /// lag's products are still added in index order, so every value is the same double `autocorrelation` gives.
    public static func peakAutocorrelation(_ x: [Double], segments: [Int], lags range: ClosedRange<Int>)
        -> (value: Double, lag: Int)? {
        var best: (value: Double, lag: Int)?
        let energy = energy(x, segments: segments)
        guard energy > 0 else { return nil }
        var lag = max(1, range.lowerBound)
        while lag <= range.upperBound {
            let width = min(4, range.upperBound - lag + 1)
            let sums = productsOfFourLags(x, segments: segments, from: lag)
            for k in 0..<width {
                let pairs = pairCount(x.count, segments: segments, lag: lag + k)
                guard pairs > 0 else { continue }
                let value = (sums[k] / Double(pairs)) / (energy / Double(x.count))
                if value > (best?.value ?? -.infinity) { best = (value, lag + k) }
            }
            lag += width
        }
        return best
    }

    /// Σ x[i]·x[i+m] within each segment for m = lag...lag+3, each summed in index order.
    private static func productsOfFourLags(_ x: [Double], segments: [Int], from lag: Int) -> SIMD4<Double> {
        x.withUnsafeBufferPointer { x in
            var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
            for (k, start) in segments.enumerated() {
                let end = k + 1 < segments.count ? segments[k + 1] : x.count
                // Every lag pairs i with i + m while i + m < end: the first indices serve all four lags.
                var i = start
                let shared = end - lag - 3
                while i < shared {
                    let a = x[i]
                    s0 += a * x[i + lag]; s1 += a * x[i + lag + 1]; s2 += a * x[i + lag + 2]; s3 += a * x[i + lag + 3]
                    i += 1
                }
                while i < end - lag {
                    let a = x[i]
                    s0 += a * x[i + lag]
                    if i + lag + 1 < end { s1 += a * x[i + lag + 1] }
                    if i + lag + 2 < end { s2 += a * x[i + lag + 2] }
                    i += 1
                }
            }
            return SIMD4(s0, s1, s2, s3)
        }
    }

    /// How many products the unbiased autocorrelation at `lag` averages.
    private static func pairCount(_ count: Int, segments: [Int], lag: Int) -> Int {
        var pairs = 0
        for (k, start) in segments.enumerated() {
            let end = k + 1 < segments.count ? segments[k + 1] : count
            if end - start > lag { pairs += end - start - lag }
        }
        return pairs
    }

    /// Step regularity and symmetry for steps of about `stepSamples` samples: the dominant peak within ±30 %
    /// of the step lag, then within ±30 % of twice the lag found (Moe-Nilssen & Helbostad's first and second
    /// dominant peaks).
    public static func regularityAndSymmetry(_ x: [Double], segments: [Int], stepSamples: Double)
        -> (regularity: Double, symmetry: Double)? {
        guard stepSamples >= 2 else { return nil }
        let low = max(1, Int((0.7 * stepSamples).rounded(.down))), high = Int((1.3 * stepSamples).rounded(.up))
        guard let step = peakAutocorrelation(x, segments: segments, lags: low...high) else { return nil }
        let stride = Double(2 * step.lag)
        let strideLow = Int((0.85 * stride).rounded(.down)), strideHigh = Int((1.15 * stride).rounded(.up))
        guard let strideValue = peakAutocorrelation(x, segments: segments, lags: strideLow...strideHigh),
              strideValue.value > 0 else { return nil }
        return (step.value, step.value / strideValue.value)
    }

    /// The inverted pendulum: a step of vertical excursion `h` of the body's centre with legs of length `l`
    /// moves it forward 2·√(2lh − h²) (Zijlstra & Hof 2003), times their correction `factor`.
    public static func pendulumStepLength(excursionMeters h: Double, legLengthMeters l: Double, factor: Double) -> Double? {
        guard h > 0, h < l else { return nil }
        return factor * 2 * (2 * l * h - h * h).squareRoot()
    }

    /// Vertical displacement from vertical acceleration (m/s², mean removed) sampled at `rateHz`: integrated
    /// twice, each time high-passed at `cutoffHz` forward and backward (no phase shift), so that the drift of
    /// the integration goes and the per-step excursion stays (Zijlstra & Hof 2003).
    public static func displacement(_ acceleration: [Double], rateHz: Double, cutoffHz: Double) -> [Double] {
        guard !acceleration.isEmpty else { return [] }
        let dt = 1 / rateHz
        var velocity = integrate(acceleration, dt: dt)
        highPassBothWays(&velocity, cutoffHz: cutoffHz, rateHz: rateHz)
        var position = integrate(velocity, dt: dt)
        highPassBothWays(&position, cutoffHz: cutoffHz, rateHz: rateHz)
        return position
    }

    static func integrate(_ x: [Double], dt: Double) -> [Double] {
        var out = [Double](repeating: 0, count: x.count)
        var sum = 0.0
        for i in 1..<max(1, x.count) {
            sum += 0.5 * (x[i - 1] + x[i]) * dt
            out[i] = sum
        }
        return out
    }

    static func highPassBothWays(_ x: inout [Double], cutoffHz: Double, rateHz: Double) {
        guard let first = x.first else { return }
        var forward = Biquad.highPass(cutoffHz: cutoffHz, sampleRateHz: rateHz)
        forward.settle(at: first)
        for i in x.indices { x[i] = forward.apply(x[i]) }
        var backward = Biquad.highPass(cutoffHz: cutoffHz, sampleRateHz: rateHz)
        backward.settle(at: x[x.count - 1])
        for i in x.indices.reversed() { x[i] = backward.apply(x[i]) }
    }
}
