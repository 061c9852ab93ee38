/// How much of a real walk the detector lets through: the gate's walking recall, as `stepd bench` reports it.
///
/// Where the truth gives step instants, it is per step: the true steps inside walking bouts that a detected step
/// pairs with (`StepMatching`), over the true steps inside them. A footfall the cycle finder misses counts against
/// it as a step the gate dropped does, so this is a lower bound of the gate's own recall.
///
/// Where the truth is a count and the walk's first and last sample (the Cambridge walks), no step can be paired,
/// so it is per second: the share of the walk during which steps were being counted. A run of detected steps
/// (each within `maximumStepIntervalSeconds` of the one before) covers from one median step interval before its
/// first step (a step instant is the footfall that ends the step) to half an interval after its last (the trailing
/// foot comes alongside); the covered time inside the walk over the walk's length. It sees a drop of two seconds
/// or more, not a single step; and as a labelled walk starts with the body's first movement, up to two steps
/// before the first footfall, a walk counted step for step scores 96-100 % by it (median 99.4 % on Cambridge).
public struct WalkingRecall: Equatable, Sendable {
    public enum Unit: String, Sendable {
        /// True steps paired with a detected one, over true steps.
        case steps
        /// Seconds of the walk covered by runs of counted steps, over the walk's seconds.
        case seconds
    }

    public var unit: Unit
    /// What the detector let through: true steps paired, or seconds covered.
    public var kept: Double
    /// All of it: true steps inside the bouts, or the walk's seconds.
    public var total: Double

    public init(unit: Unit, kept: Double, total: Double) {
        self.unit = unit
        self.kept = kept
        self.total = total
    }

    /// kept / total, percent; 100 when there was nothing to keep.
    public var percent: Double { total > 0 ? kept / total * 100 : 100 }

    /// A walking bout ends where the truth has a pause longer than this, seconds.
    public static let boutGapSeconds = 2.0
    /// Shorter runs of true steps are not walks the gate must let through (it confirms a bout after six).
    public static let boutMinimumSteps = 10
    /// Detected steps further apart than this are two runs, seconds.
    public static let maximumStepIntervalSeconds = 2.0

    /// The walking bouts of a truth given as step instants: runs of at least `minimumSteps` true steps, each
    /// within `gapSeconds` of the one before, from the first step to the last.
    public static func bouts(trueTimes: [Double], gapSeconds: Double = boutGapSeconds,
                             minimumSteps: Int = boutMinimumSteps) -> [ClosedRange<Double>] {
        let times = trueTimes.sorted()
        var bouts: [ClosedRange<Double>] = []
        var start = 0
        for i in times.indices where i == times.count - 1 || times[i + 1] - times[i] > gapSeconds {
            if i - start + 1 >= minimumSteps { bouts.append(times[start]...times[i]) }
            start = i + 1
        }
        return bouts
    }

    /// Per step: the true steps inside `bouts` that pair with a detected step.
    public static func perStep(trueTimes: [Double], detectedTimes: [Double], bouts: [ClosedRange<Double>],
                               toleranceSeconds: Double = 0.25) -> WalkingRecall {
        let inside = StepMatching.accuracy(trueTimes: trueTimes, detectedTimes: detectedTimes, within: bouts,
                                           toleranceSeconds: toleranceSeconds)
        return WalkingRecall(unit: .steps, kept: Double(inside.matchedCount), total: Double(inside.trueCount))
    }

    /// Per second: the share of `walk` covered by runs of detected steps.
    public static func perSecond(detectedTimes: [Double], walk: ClosedRange<Double>,
                                 maximumStepIntervalSeconds: Double = maximumStepIntervalSeconds) -> WalkingRecall {
        let covered = coveredSpans(detectedTimes: detectedTimes, walk: walk, maximumStepIntervalSeconds: maximumStepIntervalSeconds)
        return WalkingRecall(unit: .seconds, kept: covered.reduce(0) { $0 + $1.upperBound - $1.lowerBound },
                             total: walk.upperBound - walk.lowerBound)
    }

    /// The gate's own share, per step: of the true steps inside `bouts` that the detector without its gate pairs,
    /// those that the detector with it pairs too. A footfall the cycle finder misses is out of it, as the gate never
    /// saw it.
    public static func gateShare(trueTimes: [Double], gatedTimes: [Double], ungatedTimes: [Double], bouts: [ClosedRange<Double>],
                                 toleranceSeconds: Double = 0.25) -> WalkingRecall {
        let ungated = pairedTrueSteps(trueTimes: trueTimes, detectedTimes: ungatedTimes, bouts: bouts, toleranceSeconds: toleranceSeconds)
        let gated = pairedTrueSteps(trueTimes: trueTimes, detectedTimes: gatedTimes, bouts: bouts, toleranceSeconds: toleranceSeconds)
        return WalkingRecall(unit: .steps, kept: Double(ungated.intersection(gated).count), total: Double(ungated.count))
    }

    /// The gate's own share, per second: of the walk's seconds that the detector without its gate covers with
    /// counted steps, those that the detector with it covers too.
    public static func gateShare(gatedTimes: [Double], ungatedTimes: [Double], walk: ClosedRange<Double>) -> WalkingRecall {
        let ungated = coveredSpans(detectedTimes: ungatedTimes, walk: walk), gated = coveredSpans(detectedTimes: gatedTimes, walk: walk)
        var both = 0.0
        for a in ungated {
            for b in gated { both += max(0, min(a.upperBound, b.upperBound) - max(a.lowerBound, b.lowerBound)) }
        }
        return WalkingRecall(unit: .seconds, kept: both, total: ungated.reduce(0) { $0 + $1.upperBound - $1.lowerBound })
    }

    /// The spans of `walk` covered by runs of detected steps (disjoint, in order).
    static func coveredSpans(detectedTimes: [Double], walk: ClosedRange<Double>,
                             maximumStepIntervalSeconds: Double = maximumStepIntervalSeconds) -> [ClosedRange<Double>] {
        let times = detectedTimes.sorted()
        var spans: [ClosedRange<Double>] = []
        var start = 0
        for i in times.indices where i == times.count - 1 || times[i + 1] - times[i] > maximumStepIntervalSeconds {
            let run = times[start...i]
            var intervals = zip(run.dropFirst(), run).map { $0 - $1 }
            // A lone step covers nothing: a step is a walk only with the steps around it.
            if !intervals.isEmpty {
                let step = median(&intervals)
                let from = max(run.first! - step, walk.lowerBound, spans.last?.upperBound ?? -.infinity)
                let to = min(run.last! + step / 2, walk.upperBound)
                if to > from { spans.append(from...to) }
            }
            start = i + 1
        }
        return spans
    }

    /// The true steps inside `bouts` that pair with a detected step, as `StepMatching` pairs them.
    static func pairedTrueSteps(trueTimes: [Double], detectedTimes: [Double], bouts: [ClosedRange<Double>],
                                toleranceSeconds: Double) -> Set<Double> {
        let truth = trueTimes.sorted(), detected = detectedTimes.sorted()
        let lag = StepMatching.medianLag(trueTimes: truth, detectedTimes: detected)
        var paired = Set<Double>()
        for bout in bouts {
            let margin = (bout.lowerBound - toleranceSeconds)...(bout.upperBound + toleranceSeconds)
            paired.formUnion(StepMatching.pairedTruth(truth: truth.filter { bout.contains($0) }, detected: detected.filter { margin.contains($0 - lag) },
                                                      lagSeconds: lag, toleranceSeconds: toleranceSeconds))
        }
        return paired
    }

    /// The pooled recall of several traces of one unit: the sums of kept and total. Nil when empty or mixed.
    public static func pooled(_ parts: [WalkingRecall]) -> WalkingRecall? {
        guard let unit = parts.first?.unit, parts.allSatisfy({ $0.unit == unit }) else { return nil }
        return WalkingRecall(unit: unit, kept: parts.reduce(0) { $0 + $1.kept }, total: parts.reduce(0) { $0 + $1.total })
    }
}
