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
        run(samples, onStep: onStep)
    }

    /// The same for an array (a recording, a source's batch): a concrete entry point, because a caller in
    /// another module would otherwise iterate through the unspecialized generic, a witness-table call and an
    /// allocation per sample (half the throughput of `stepd bench`).
    public func process(_ samples: [Sample], onStep: (Double) -> Void) {
        run(samples, onStep: onStep)
    }

    @inline(__always)
    private func run<C: Sequence>(_ samples: C, onStep: (Double) -> Void) where C.Element == Sample {
        // The loop works on local copies and writes them back once, so it makes no exclusivity-checked
        // access to this object per sample.
        var resampler = self.resampler
        var buffer = stepBuffer
        stepBuffer = []
        let detector = self.detector
        var countIn = 0, countOut = 0
        for sample in samples {
            countIn += 1
            resampler.push(sample) { uniform in
                countOut += 1
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
    }

    public func reset() {
        detector.reset()
        resampler.reset()
        samplesIn = 0
        samplesOut = 0
    }
}
