/// The processing chain that both the daemon and `stepd analyze` run: samples from any source are put on
/// the uniform grid and fed to the detector. Feeding the same samples gives the same steps, whatever the
/// batching, which is what lets the daemon's live count be checked against an offline analysis.
public final class StepPipeline {
    public let detector: StepDetector
    public private(set) var resampler: Resampler
    public private(set) var samplesIn = 0
    public private(set) var samplesOut = 0
    /// Samples dropped before the resampler as impossible (SamplePlausibility); part of `samplesIn`.
    public private(set) var samplesRejected = 0
    private var stepBuffer: [Double] = []

    public init(detector: StepDetector, rateHz: Double = 60) {
        self.detector = detector
        resampler = Resampler(rateHz: rateHz)
        stepBuffer.reserveCapacity(16)
    }

    /// Processes samples in order; calls `onStep` with each step's time (seconds, on the samples' clock).
    public func process<C: Sequence>(_ samples: C, onStep: (Double) -> Void) where C.Element == Sample {
        run(samples, onUniformSample: { _ in }, onStep: onStep)
    }

    /// As above, and shows every sample of the uniform grid to `onUniformSample` (motion, tilt) before the
    /// detector sees it.
    public func process<C: Sequence>(_ samples: C, onUniformSample: (Sample) -> Void,
                                     onStep: (Double) -> Void) where C.Element == Sample {
        run(samples, onUniformSample: onUniformSample, onStep: onStep)
    }

    // Concrete entry points for arrays (a recording, a source's batch): a caller in another module would
    // otherwise iterate through the unspecialized generic, a witness-table call and an allocation per sample
    // (a fifth of the throughput in `stepd bench`).
    public func process(_ samples: [Sample], onStep: (Double) -> Void) {
        run(samples, onUniformSample: { _ in }, onStep: onStep)
    }

    public func process(_ samples: [Sample], onUniformSample: (Sample) -> Void, onStep: (Double) -> Void) {
        run(samples, onUniformSample: onUniformSample, onStep: onStep)
    }

    @inline(__always)
    private func run<C: Sequence>(_ samples: C, onUniformSample: (Sample) -> Void,
                                  onStep: (Double) -> Void) where C.Element == Sample {
        // The loop works on local copies and writes them back once, so it makes no exclusivity-checked
        // access to this object per sample.
        var resampler = self.resampler
        var buffer = stepBuffer
        stepBuffer = []
        let detector = self.detector
        var countIn = 0, countOut = 0, countRejected = 0
        for sample in samples {
            countIn += 1
            guard SamplePlausibility.isPlausible(sample) else {
                countRejected += 1
                continue
            }
            resampler.push(sample) { uniform in
                countOut += 1
                onUniformSample(uniform)
                detector.process(uniform, steps: &buffer)
            }
            if !buffer.isEmpty {
                for t in buffer { onStep(t) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        self.resampler = resampler
        stepBuffer = buffer
        samplesIn += countIn
        samplesOut += countOut
        samplesRejected += countRejected
    }

    public func reset() {
        detector.reset()
        resampler.reset()
        samplesIn = 0
        samplesOut = 0
        samplesRejected = 0
    }
}
