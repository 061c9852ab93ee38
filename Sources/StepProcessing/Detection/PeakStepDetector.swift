/// The default detector: the acceleration magnitude band-passed to the band of walking cadence, and a step
/// at each peak that stands above an adaptive threshold and comes no sooner than a step can follow a step.
public final class PeakStepDetector: StepDetector {
    public let name = "peak"
    private let sampleRateHz: Double
    private var highPass: Biquad
    private var lowPass: Biquad
    private var started = false
    // The last two filtered values, to find a local maximum at the middle one.
    private var previous = 0.0, beforePrevious = 0.0
    private var lastStepTime = -Double.infinity
    /// A running estimate of recent peak height, so the threshold follows gentle and vigorous walking alike.
    private var peakLevel = 0.0

    /// Human steps come at most about 4 per second (running sprint cadence, 240 spm).
    static let minimumStepInterval = 0.25
    /// Below this the signal is sensor noise and handling, not a footfall (m/s^2).
    static let floor = 0.6

    public init(sampleRateHz: Double = 60) {
        self.sampleRateHz = sampleRateHz
        // Walking cadence lies between about 1 and 3 steps per second.
        highPass = .highPass(cutoffHz: 0.8, sampleRateHz: sampleRateHz)
        lowPass = .lowPass(cutoffHz: 3.5, sampleRateHz: sampleRateHz)
    }

    public func process(_ sample: Sample, steps: inout [Double]) {
        let magnitude = sample.acceleration.magnitude
        if !started {
            highPass.settle(at: magnitude)
            lowPass.settle(at: 0)
            started = true
        }
        let value = lowPass.apply(highPass.apply(magnitude))
        let period = 1 / sampleRateHz
        let peakTime = sample.time - period
        if previous > beforePrevious && previous >= value {
            let threshold = max(Self.floor, 0.5 * peakLevel)
            if previous > threshold && peakTime - lastStepTime >= Self.minimumStepInterval {
                steps.append(peakTime)
                lastStepTime = peakTime
                peakLevel += (previous - peakLevel) * 0.25
            }
        }
        // Forget vigour slowly, so that a pause followed by gentle steps is not missed for long.
        peakLevel *= 1 - period / 3
        beforePrevious = previous
        previous = value
    }

    public func reset() {
        started = false
        previous = 0; beforePrevious = 0
        lastStepTime = -.infinity
        peakLevel = 0
        highPass.reset(); lowPass.reset()
    }
}
