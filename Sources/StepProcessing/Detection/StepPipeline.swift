/// The processing chain that both the daemon and `stepd analyze` run: samples from any source are put on
/// the uniform grid and fed to the detector. Feeding the same samples gives the same steps, whatever the
/// batching, which is what lets the daemon's live count be checked against an offline analysis.
public final class StepPipeline {
    public let detector: StepDetector
    public private(set) var resampler: Resampler
    public private(set) var samplesIn = 0
    public private(set) var samplesOut = 0
    private var stepBuffer: [Double] = []

    public init(detector: StepDetector, rateHz: Double = 60) {
        self.detector = detector
        resampler = Resampler(rateHz: rateHz)
        stepBuffer.reserveCapacity(16)
    }

    /// Processes samples in order; calls `onStep` with each step's time (seconds, on the samples' clock).
    public func process<C: Sequence>(_ samples: C, onStep: (Double) -> Void) where C.Element == Sample {
        process(samples, onUniformSample: { _ in }, onStep: onStep)
    }

    /// As above, and shows every sample of the uniform grid to `onUniformSample` (motion, tilt) before the
    /// detector sees it.
    public func process<C: Sequence>(_ samples: C, onUniformSample: (Sample) -> Void,
                                     onStep: (Double) -> Void) where C.Element == Sample {
        for sample in samples {
            samplesIn += 1
            resampler.push(sample) { uniform in
                samplesOut += 1
                onUniformSample(uniform)
                detector.process(uniform, steps: &stepBuffer)
            }
            if !stepBuffer.isEmpty {
                for t in stepBuffer { onStep(t) }
                stepBuffer.removeAll(keepingCapacity: true)
            }
        }
    }

    public func reset() {
        detector.reset()
        resampler.reset()
        samplesIn = 0
        samplesOut = 0
    }
}
