/// A step detector consumes the uniform-rate acceleration stream and reports step instants.
///
/// Every detector runs causally: `process` sees each sample once, in order. A detector may report a step
/// later than it happened (a filter's delay, or a walking bout confirmed after its first steps), so a step
/// carries its own time, on the samples' clock.
public protocol StepDetector: AnyObject {
    /// The name used on the command line and in the protocol (`--detector NAME`).
    var name: String { get }
    /// Feeds one sample of the uniform grid; appends the times of any steps it now reports to `steps`.
    func process(_ sample: Sample, steps: inout [Double])
    /// Forgets all history, as at start-up.
    func reset()
    /// The longest a step can be reported after its stamped time: how far back a consumer must expect the
    /// step it is handed to lie (the store bins a step counted after a reset in the reset's period).
    var longestReportDelaySeconds: Double { get }
}

/// The detectors the daemon knows, by name.
public enum StepDetectorKind: String, CaseIterable, Sendable {
    case threshold
    case peak

    public static let `default` = StepDetectorKind.peak

    /// A detector for a device carried at `placement` (the peak detector's walking gate depends on it).
    public func make(sampleRateHz: Double, placement: Placement = .default) -> StepDetector {
        switch self {
        case .threshold: return ThresholdStepDetector(configuration: .init(sampleRateHz: sampleRateHz))
        case .peak: return PeakStepDetector(configuration: .init(sampleRateHz: sampleRateHz, placement: placement))
        }
    }
}
