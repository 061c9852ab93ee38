import Foundation

/// The default detector: the acceleration magnitude band-passed to walking cadence, its oscillations found
/// with an adaptive hysteresis, and counted as steps only inside a confirmed walking bout.
///
/// Stages (see docs/step-detection.md for the why and the measured figures):
/// 1. magnitude |a|: independent of how the device is held or carried;
/// 2. band-pass 0.8–2.5 Hz (second-order Butterworth high-pass and low-pass): walking cadence is 1.4–2.5 steps
///    per second, gravity and posture changes lie below, impacts and hand tremor above;
/// 3. `GaitCycleFinder`: one oscillation per footfall, with a hysteresis that scales with the signal;
/// 4. `WalkingBout`: six regular, similar cycles (or four very even ones) confirm a bout and are counted
///    retroactively with the push-off before them; later cycles count at once while the rhythm lasts, smaller
///    ones too when on the (slower) rhythm of a turn, and at twice the rhythm once a stair descent's quick, even
///    footfalls show; a cycle after the device has tilted from the bout's posture waits up to 0.95 s for the
///    walk to go on (a sit's bounce does not); the end of a bout counts its closing step;
/// 5. `WalkingGate`: a bout is confirmed only where the motion has been gait (a vertical bounce, not a hand's
///    work) since the third of its cycles, and ends when it has not been for four seconds.
///
/// Causal and streaming, O(1) work and fixed memory per sample. Inside a bout a step is reported when its
/// cycle ends, about half a step period after the stamped instant (0.2–0.4 s at usual cadences), or with the next
/// one (at most 0.95 s after) when the device had tilted; the first six steps of a bout are reported together
/// when the sixth ends, and the closing step when the pause exceeds 1.5 s.
public final class PeakStepDetector: StepDetector {
    public struct Configuration: Sendable, Equatable {
        public var sampleRateHz: Double = 60
        /// Below the slowest walking cadence (about 1.2 steps per second gives energy down to 1 Hz).
        public var highPassHz: Double = 0.8
        /// Above the fastest walking cadence (2.5 steps per second), below heel-strike transients.
        public var lowPassHz: Double = 2.5
        public var cycles = GaitCycleFinder.Configuration()
        public var bout = WalkingBout.Configuration()
        /// Confirms a bout only where the motion is gait; nil counts every regular run (the detector before the gate).
        public var gate: WalkingGate.Configuration? = WalkingGate.Configuration()
        /// A bout's closing step is not counted when the direction of gravity the device sees at the end of the
        /// pause has turned by more than this angle (radians) from its direction during the bout's last steps:
        /// sitting down turns a thigh (and a trouser pocket) from upright to level, about 90°, and a wrist from
        /// hanging to resting on the lap, but at the end of the pause (1.5 s after the last step) the sit is often
        /// still under way. Measured at that moment, every walk in our recordings that ended standing (Cambridge,
        /// lowerback-turns, simul-hand, OxWalk) had turned by less than 16°, and every timed up-and-go walk that
        /// ended seated by 18° or more (most by over 45°): 20°. The same angle makes a cycle inside a bout wait
        /// for the next step before it counts (`WalkingBout.Configuration.turnedStepWaitSeconds`).
        public var postureTurnRadians = Double.pi / 9
        /// The low-pass time constant of the posture's gravity direction, seconds: slower than a step.
        public var postureSeconds = 0.5

        public init(sampleRateHz: Double = 60) { self.sampleRateHz = sampleRateHz }

        /// The detector for a device carried there (the gate of `WalkingGate.Configuration(placement:)`).
        public init(sampleRateHz: Double = 60, placement: Placement) {
            self.sampleRateHz = sampleRateHz
            gate = WalkingGate.Configuration(placement: placement)
        }
    }

    public let name = "peak"
    public let configuration: Configuration
    /// All mutable state in one value, held by this object alone: the per-sample path changes it through the
    /// pointer, without the run-time exclusivity check that a stored property of a class costs on each access
    /// (a twentieth of `stepd analyze`'s time).
    private let chain: UnsafeMutablePointer<Chain>

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        chain = .allocate(capacity: 1)
        chain.initialize(to: Chain(configuration: configuration))
    }

    deinit {
        chain.deinitialize(count: 1)
        chain.deallocate()
    }

    public convenience init(sampleRateHz: Double) {
        self.init(configuration: Configuration(sampleRateHz: sampleRateHz))
    }

    /// A bout's first steps wait for its confirmation (`confirmationSteps` steps at most
    /// `maximumStepIntervalSeconds` apart), plus a second for the filters and the end of the cycle.
    public var longestReportDelaySeconds: Double {
        Double(configuration.bout.confirmationSteps) * configuration.bout.maximumStepIntervalSeconds + 1
    }

    /// Whether the detector is inside a confirmed walking bout.
    public var isWalking: Bool { chain.pointee.bout.isWalking }

    /// The time of a step that waits for the walk to go on because the device had tilted; nil when none waits.
    public var waitingStepTime: Double? { chain.pointee.bout.waitingStepTime }

    public func process(_ sample: Sample, steps: inout [Double]) {
        chain.pointee.process(sample, steps: &steps)
    }

    public func reset() {
        chain.pointee = Chain(configuration: configuration)
    }

    struct Chain {
        var highPass: Biquad
        var lowPass: Biquad
        var finder: GaitCycleFinder
        var bout: WalkingBout
        /// Kept as a plain value with a flag, not an optional: binding an optional copies the gate's state.
        var gate: WalkingGate
        let gated: Bool
        let boutEndSeconds: Double
        var lastTime = -Double.infinity
        let restartAfterSeconds: Double
        /// The acceleration low-passed (the gravity direction the device sees), and its value at the bout's steps.
        var posture = Vector3.zero
        var walkingPosture = Vector3.zero
        let postureRate: Double
        let postureCosine: Double
        let pauseSeconds: Double

        init(configuration: Configuration) {
            highPass = .highPass(cutoffHz: configuration.highPassHz, sampleRateHz: configuration.sampleRateHz)
            lowPass = .lowPass(cutoffHz: configuration.lowPassHz, sampleRateHz: configuration.sampleRateHz)
            finder = GaitCycleFinder(configuration: configuration.cycles, sampleRateHz: configuration.sampleRateHz)
            bout = WalkingBout(configuration: configuration.bout)
            gated = configuration.gate != nil
            gate = WalkingGate(configuration: configuration.gate ?? .init(), sampleRateHz: configuration.sampleRateHz)
            boutEndSeconds = gate.configuration.boutEndSeconds
            // The resampler restarts its grid after a gap; more than two missing grid points means a new signal.
            restartAfterSeconds = 2.5 / configuration.sampleRateHz
            postureRate = 1 / (configuration.sampleRateHz * configuration.postureSeconds)
            postureCosine = cos(configuration.postureTurnRadians)
            pauseSeconds = configuration.bout.maximumStepIntervalSeconds
        }

        /// Whether gravity, as the device sees it, has turned by more than the posture angle since the bout's steps.
        func postureTurned() -> Bool {
            // Both vectors are about g long; compare the cosine of their angle without a square root.
            let dot = posture.dot(walkingPosture)
            let lengths = posture.dot(posture) * walkingPosture.dot(walkingPosture)
            return dot <= 0 || dot * dot < postureCosine * postureCosine * lengths
        }

        mutating func process(_ sample: Sample, steps: inout [Double]) {
            let magnitude = sample.acceleration.magnitude
            if sample.time - lastTime > restartAfterSeconds || sample.time < lastTime {
                // First sample, or the stream resumed after a gap: start the filters as if this value had
                // always been there, and forget the rhythm of a walk that may be long over.
                highPass.settle(at: magnitude)
                lowPass.settle(at: 0)
                finder.reset()
                bout.reset()
                if gated { gate.settle(at: sample.acceleration, magnitude: magnitude) }
                posture = sample.acceleration
            }
            lastTime = sample.time
            let value = lowPass.apply(highPass.apply(magnitude))
            if gated { gate.process(sample.acceleration, magnitude: magnitude, band: value, time: sample.time) }
            posture = posture + (sample.acceleration - posture) * postureRate
            if let cycle = finder.process(value, time: sample.time) {
                if gated { bout.gateOpenSince = gate.isOpen ? gate.openSince : .infinity }
                if bout.isWalking { bout.postureChanged = postureTurned() }
                let wasWalking = bout.isWalking, counted = steps.count
                bout.take(cycle, steps: &steps)
                // The bout's posture follows its steps (a slow change, a phone raised to read it, is the walk's);
                // not a cycle that waits: the posture must come back to the walk's for it to count.
                if bout.isWalking && steps.count > counted {
                    walkingPosture = wasWalking ? walkingPosture + (posture - walkingPosture) * 0.5 : posture
                }
            }
            if bout.isWalking && (bout.waitingStepTime != nil || sample.time - bout.lastStepTimeValue > pauseSeconds) {
                bout.postureChanged = postureTurned()
            }
            bout.advance(to: sample.time, steps: &steps)
            if gated && bout.isWalking && !gate.isOpen && sample.time - gate.closedAt > boutEndSeconds {
                bout.abandon(steps: &steps)
            }
        }
    }
}
