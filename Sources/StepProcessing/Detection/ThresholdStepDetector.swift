/// The seed's algorithm, unchanged: a first-order low-pass per axis (5 Hz at 60 Hz), the magnitude in g,
/// and a step when a rise above 1.1 g is followed by a fall below 0.9 g.
public final class ThresholdStepDetector: StepDetector {
    public struct Configuration: Sendable, Equatable {
        public var sampleRateHz: Double
        public var cutoffHz: Double
        public var riseAboveG: Double
        public var fallBelowG: Double

        public init(sampleRateHz: Double = 60, cutoffHz: Double = 5, riseAboveG: Double = 1.1, fallBelowG: Double = 0.9) {
            self.sampleRateHz = sampleRateHz
            self.cutoffHz = cutoffHz
            self.riseAboveG = riseAboveG
            self.fallBelowG = fallBelowG
        }
    }

    public let name = "threshold"
    public let configuration: Configuration
    private var filter: LowPassFilter
    private var risen = false

    /// A step is stamped when it is reported; a second covers the low-pass filter's lag.
    public let longestReportDelaySeconds = 1.0

    public init(configuration: Configuration = .init()) {
        precondition(configuration.riseAboveG > configuration.fallBelowG, "rise threshold must exceed fall threshold")
        self.configuration = configuration
        filter = LowPassFilter(cutoffHz: configuration.cutoffHz, sampleRateHz: configuration.sampleRateHz)
    }

    public func process(_ sample: Sample, steps: inout [Double]) {
        let g = filter.apply(sample.acceleration).magnitude / standardGravity
        if !risen {
            if g > configuration.riseAboveG { risen = true }
        } else if g < configuration.fallBelowG {
            risen = false
            steps.append(sample.time)
        }
    }

    public func reset() {
        filter.reset()
        risen = false
    }
}
