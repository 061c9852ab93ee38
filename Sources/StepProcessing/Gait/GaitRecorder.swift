/// Keeps what a walking bout's gait measures need until the bout is known to have ended: the vertical
/// acceleration of the last few minutes and the step times of the same span, in rings of fixed size.
///
/// The daemon and `stepd analyze` feed it every sample of the pipeline's uniform grid and every step, and ask
/// for a bout's measures when their `ActivityBoutFinder` closes it (half a minute after its last step, when no
/// late step can join it any more). Per sample it costs three one-pole filters, a dot product, a square root
/// and two stores; the bout's arithmetic runs once, when it is asked for. A bout longer than the rings is
/// measured over its last `signalCapacity` samples (4.5 minutes at 60 Hz, less the half minute since its end).
public struct GaitRecorder: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The uniform grid's rate (the pipeline's 60 Hz).
        public var rateHz = 60.0
        public var placement = Placement.default
        /// The walker's height, m; the leg length (hip joint to floor) is `legLengthFraction` of it: 0.53 in
        /// Winter's anthropometric table (greater trochanter height; Biomechanics and Motor Control of Human
        /// Movement, 4th ed., 2009).
        public var heightMeters = 1.70
        public var legLengthFraction = 0.53
        /// Zijlstra & Hof's correction of the pendulum's step length: the model leaves out the double support,
        /// in which the body moves forward about a foot's length more; they found the lengths short by a
        /// factor of 1.25 on average against measured steps.
        public var pendulumFactor = 1.25
        /// A stride is two steps of at most this long each (the detector's longest step).
        public var maximumStepSeconds = 1.5
        /// The high-pass after each integration of the vertical acceleration: below the slowest steps (0.7 Hz
        /// at 40 steps a minute), above the drift of integrating an offset.
        public var displacementCutoffHz = 0.4
        /// The time constant of the gravity estimate, s: the direction of "down" from the acceleration,
        /// averaged over about a stride.
        public var gravitySeconds = 1.0
        /// Ring sizes (powers of two): 16,384 samples is 273 s at 60 Hz, 2,048 steps more than that at a run.
        public var signalCapacity = 16_384
        public var stepCapacity = 2_048

        public init() {}

        public var legLengthMeters: Double { legLengthFraction * heightMeters }
    }

    public let configuration: Configuration
    private var values: [Float]
    private var times: [Double]
    private var written = 0
    private var steps: [Double]
    private var stepsWritten = 0
    private var gravity = Vector3(x: 0, y: 0, z: 0)
    private var lastTime = -Double.infinity
    private let gravityAlpha: Double
    private let restartAfterSeconds: Double

    public init(configuration: Configuration = .init()) {
        precondition(configuration.signalCapacity > 0 && configuration.signalCapacity & (configuration.signalCapacity - 1) == 0)
        precondition(configuration.stepCapacity > 0 && configuration.stepCapacity & (configuration.stepCapacity - 1) == 0)
        self.configuration = configuration
        values = [Float](repeating: 0, count: configuration.signalCapacity)
        times = [Double](repeating: -.infinity, count: configuration.signalCapacity)
        steps = [Double](repeating: -.infinity, count: configuration.stepCapacity)
        let dt = 1 / configuration.rateHz
        // RC low-pass: alpha = dt / (dt + RC).
        gravityAlpha = dt / (dt + configuration.gravitySeconds)
        restartAfterSeconds = 2.5 / configuration.rateHz
    }

    /// One sample of the uniform grid: its acceleration along the direction of gravity.
    public mutating func add(_ sample: Sample) {
        let a = sample.acceleration
        if sample.time - lastTime > restartAfterSeconds || sample.time < lastTime {
            gravity = a  // a new stretch of signal: "down" is where the acceleration points now
        } else {
            gravity.x += (a.x - gravity.x) * gravityAlpha
            gravity.y += (a.y - gravity.y) * gravityAlpha
            gravity.z += (a.z - gravity.z) * gravityAlpha
        }
        lastTime = sample.time
        let g = gravity.magnitude
        let vertical = g > 0 ? (a.x * gravity.x + a.y * gravity.y + a.z * gravity.z) / g : 0
        let slot = written & (configuration.signalCapacity - 1)
        values[slot] = Float(vertical)
        times[slot] = sample.time
        written += 1
    }

    /// A step the detector reported, at its instant. Steps come in time order (the detectors never report one
    /// before one already reported); one that does not is placed among the others.
    public mutating func step(at time: Double) {
        let mask = configuration.stepCapacity - 1
        var index = stepsWritten
        let oldest = max(0, stepsWritten - configuration.stepCapacity + 1)
        while index > oldest && steps[(index - 1) & mask] > time {
            steps[index & mask] = steps[(index - 1) & mask]
            index -= 1
        }
        steps[index & mask] = time
        stepsWritten += 1
    }

    /// The measures of the bout from its first step `start` to its last `end` (seconds on the samples' clock).
    public func measures(from start: Double, to end: Double) -> GaitMeasures {
        var result = GaitMeasures()
        let stepTimes = self.stepTimes(from: start - 1e-6, to: end + 1e-6)
        guard let strides = GaitMath.strideStatistics(stepTimes: stepTimes, maximumStepSeconds: configuration.maximumStepSeconds)
        else { return result }
        result.strideTimeSeconds = strides.median
        result.strideTimeCV = strides.cv
        let rate = configuration.rateHz
        // The autocorrelation over the bout itself.
        var (signal, segments) = self.signal(from: start, to: end)
        if !signal.isEmpty {
            let mean = signal.reduce(0, +) / Double(signal.count)
            for i in signal.indices { signal[i] -= mean }
            if let found = GaitMath.regularityAndSymmetry(signal, segments: segments, stepSamples: strides.median / 2 * rate) {
                result.regularity = found.regularity
                result.symmetry = found.symmetry
            }
        }
        guard configuration.placement.carriesCentreOfMass else { return result }
        // The excursions, with a stride's margin either side so that the filters have settled at the first step.
        let margin = strides.median
        let (wide, wideSegments) = self.signal(from: start - margin, to: end + margin)
        var wideTimes: [Double] = []
        var lengthSum = 0.0, lengthCount = 0, timeSum = 0.0
        for (k, first) in wideSegments.enumerated() {
            let last = k + 1 < wideSegments.count ? wideSegments[k + 1] : wide.count
            var stretch = Array(wide[first..<last])
            let mean = stretch.reduce(0, +) / Double(stretch.count)
            for i in stretch.indices { stretch[i] -= mean }
            let height = GaitMath.displacement(stretch, rateHz: rate, cutoffHz: configuration.displacementCutoffHz)
            wideTimes = self.times(from: start - margin, to: end + margin, skip: first, count: last - first)
            guard let t0 = wideTimes.first else { continue }
            for i in 0..<max(0, stepTimes.count - 1) {
                let a = stepTimes[i], b = stepTimes[i + 1]
                guard b - a <= configuration.maximumStepSeconds, a >= t0,
                      b <= wideTimes[wideTimes.count - 1] else { continue }
                let from = Int(((a - t0) * rate).rounded()), to = min(height.count - 1, Int(((b - t0) * rate).rounded()))
                guard to > from else { continue }
                var low = Double.infinity, high = -Double.infinity
                for j in from...to { low = min(low, height[j]); high = max(high, height[j]) }
                if let length = GaitMath.pendulumStepLength(excursionMeters: high - low,
                                                            legLengthMeters: configuration.legLengthMeters,
                                                            factor: configuration.pendulumFactor) {
                    result.pendulumSteps.append(PendulumStep(start: a, end: b, excursionMeters: high - low, lengthMeters: length))
                    lengthSum += length
                    lengthCount += 1
                    timeSum += b - a
                }
            }
        }
        if lengthCount > 0, timeSum > 0 {
            result.stepLengthMeters = lengthSum / Double(lengthCount)
            result.speedMetersPerSecond = lengthSum / timeSum
        }
        return result
    }

    /// The steps from `start` to `end` still in the ring, in order.
    public func stepTimes(from start: Double, to end: Double) -> [Double] {
        let mask = configuration.stepCapacity - 1
        var out: [Double] = []
        var index = max(0, stepsWritten - configuration.stepCapacity)
        while index < stepsWritten {
            let t = steps[index & mask]
            if t > end { break }
            if t >= start { out.append(t) }
            index += 1
        }
        return out
    }

    /// The vertical acceleration from `start` to `end` still in the ring, and the indices where a contiguous
    /// stretch begins (after a gap of more than two grid points).
    func signal(from start: Double, to end: Double) -> (values: [Double], segments: [Int]) {
        let mask = configuration.signalCapacity - 1
        var out: [Double] = [], segments: [Int] = []
        var previous = -Double.infinity
        var index = firstIndex(atOrAfter: start)
        while index < written {
            let t = times[index & mask]
            if t > end { break }
            if t - previous > restartAfterSeconds || t < previous { segments.append(out.count) }
            out.append(Double(values[index & mask]))
            previous = t
            index += 1
        }
        return (out, segments)
    }

    private func times(from start: Double, to end: Double, skip: Int, count: Int) -> [Double] {
        let mask = configuration.signalCapacity - 1
        let first = firstIndex(atOrAfter: start) + skip
        return (first..<min(written, first + count)).map { times[$0 & mask] }
    }

    /// The first ring index whose time is at least `time` (times increase along the ring).
    private func firstIndex(atOrAfter time: Double) -> Int {
        var low = max(0, written - configuration.signalCapacity), high = written
        let mask = configuration.signalCapacity - 1
        while low < high {
            let mid = (low + high) / 2
            if times[mid & mask] < time { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
