/// One recording's scores for one detector: a row of `stepd bench`'s tables and of its `--json` lines.
public struct TraceScore: Equatable, Sendable {
    /// What the recording's truth is.
    public enum Truth: String, Sendable {
        /// Step instants (steps.csv): count error, F1, walking recall per step.
        case instants
        /// A step count and the walk's start and end (Cambridge): count error, walking recall per second.
        case count
        /// Activity labels and no steps (sp-sw-har): steps per activity, walks without a step.
        case labels
        /// No steps were taken: every step counted is a false one.
        case stepFree = "step_free"
    }

    /// The folder the recording came from (a data set, or a part of one).
    public var set: String
    public var trace: String
    public var placement: String
    /// As the data set names its people; unique within `set` only.
    public var person: String
    public var detector: String
    public var truth: Truth
    public var trueCount = 0
    public var detectedCount = 0
    /// Instants: the true steps a detected step pairs with.
    public var matchedCount: Int?
    /// Count truth: the steps detected inside the walk (its start and end widened by a second).
    public var detectedInWalk: Int?
    public var walkingRecall: WalkingRecall?
    /// The gate's own share of it (`WalkingRecall.gateShare`): what the detector without its gate found and the gate
    /// let through. Only for a detector with a gate.
    public var gateRecall: WalkingRecall?
    /// Steps detected inside each labelled activity's segments, and the seconds of each activity.
    public var activitySteps: [String: Int] = [:]
    public var activitySeconds: [String: Double] = [:]
    public var recordedSeconds = 0.0

    public init(set: String, trace: String, placement: String, person: String, detector: String, truth: Truth) {
        self.set = set
        self.trace = trace
        self.placement = placement
        self.person = person
        self.detector = detector
        self.truth = truth
    }

    /// Whether the truth says how many steps there were.
    public var isCounted: Bool { truth == .instants || truth == .count }

    /// |detected − true| / true over the whole recording, percent; nil without a step truth.
    public var errorPercent: Double? {
        guard isCounted else { return nil }
        return StepAccuracy(trueCount: trueCount, detectedCount: detectedCount, matchedCount: 0, lagSeconds: 0).absolutePercentageError
    }

    /// Count truth: the error of the steps detected inside the walk, percent.
    public var walkErrorPercent: Double? {
        guard let inWalk = detectedInWalk, trueCount > 0 else { return nil }
        return Double(abs(inWalk - trueCount)) / Double(trueCount) * 100
    }

    /// Count truth: the steps let through inside the walk, min(detected there, true) / true, percent. Blind to a
    /// drop that extra steps make up for, but not fooled by a labelled walk that begins before the walking.
    public var walkCountRecallPercent: Double? {
        guard let inWalk = detectedInWalk, trueCount > 0 else { return nil }
        return Double(min(inWalk, trueCount)) / Double(trueCount) * 100
    }

    public var f1: Double? {
        matchedCount.map { StepAccuracy(trueCount: trueCount, detectedCount: detectedCount, matchedCount: $0, lagSeconds: 0).f1 }
    }

    /// Labels: a run with walking segments in which not one step was counted.
    public var isWalkWithoutSteps: Bool {
        truth == .labels && (activitySeconds["walking"] ?? 0) > 0 && (activitySteps["walking"] ?? 0) == 0
    }
}

/// What a group of traces (a set, a placement, a person) adds up to.
public struct ScoreSummary: Equatable, Sendable {
    public var traces = 0
    public var trueCount = 0
    public var detectedCount = 0
    /// Over the traces with a count: the mean and the worst absolute error, percent, and the worst trace.
    public var meanErrorPercent: Double?
    public var worstErrorPercent: Double?
    public var worstErrorTrace: String?
    /// Over the traces with instants.
    public var meanF1: Double?
    public var minimumF1: Double?
    /// Pooled over the traces (nil when they mix its units), and the lowest single trace's.
    public var walkingRecall: WalkingRecall?
    public var lowestRecallPercent: Double?
    public var lowestRecallTrace: String?
    /// The gate's own share, pooled, and the lowest single trace's.
    public var gateRecall: WalkingRecall?
    public var lowestGatePercent: Double?
    public var lowestGateTrace: String?
    /// Labels: runs with walking in which no step was counted, and the steps of each activity.
    public var walksWithoutSteps = 0
    public var activitySteps: [String: Int] = [:]
    public var activitySeconds: [String: Double] = [:]
    /// Step-free: seconds recorded, for false steps per hour.
    public var recordedSeconds = 0.0

    public init(_ scores: [TraceScore]) {
        traces = scores.count
        let counted = scores.filter(\.isCounted)
        trueCount = counted.reduce(0) { $0 + $1.trueCount }
        detectedCount = scores.reduce(0) { $0 + $1.detectedCount }
        let errors = counted.compactMap { score in score.errorPercent.map { ($0, score.trace) } }
        if !errors.isEmpty {
            meanErrorPercent = errors.reduce(0) { $0 + $1.0 } / Double(errors.count)
            let worst = errors.max { $0.0 < $1.0 }!
            (worstErrorPercent, worstErrorTrace) = (worst.0, worst.1)
        }
        let f1s = scores.compactMap(\.f1)
        if !f1s.isEmpty {
            meanF1 = f1s.reduce(0, +) / Double(f1s.count)
            minimumF1 = f1s.min()
        }
        let recalls = scores.compactMap { score in score.walkingRecall.map { ($0, score.trace) } }
        walkingRecall = WalkingRecall.pooled(recalls.map(\.0))
        if let lowest = recalls.filter({ $0.0.total > 0 }).min(by: { $0.0.percent < $1.0.percent }) {
            (lowestRecallPercent, lowestRecallTrace) = (lowest.0.percent, lowest.1)
        }
        let gates = scores.compactMap { score in score.gateRecall.map { ($0, score.trace) } }
        gateRecall = WalkingRecall.pooled(gates.map(\.0))
        if let lowest = gates.filter({ $0.0.total > 0 }).min(by: { $0.0.percent < $1.0.percent }) {
            (lowestGatePercent, lowestGateTrace) = (lowest.0.percent, lowest.1)
        }
        walksWithoutSteps = scores.filter(\.isWalkWithoutSteps).count
        for score in scores {
            activitySteps.merge(score.activitySteps, uniquingKeysWith: +)
            activitySeconds.merge(score.activitySeconds, uniquingKeysWith: +)
        }
        recordedSeconds = scores.reduce(0) { $0 + $1.recordedSeconds }
    }

    /// (detected − true) / true over the group's totals, percent.
    public var totalErrorPercent: Double {
        Double(detectedCount - trueCount) / Double(max(trueCount, 1)) * 100
    }

    /// Steps per minute while walking (labels): the walking segments' steps over their minutes.
    public var walkingCadenceStepsPerMinute: Double? {
        guard let seconds = activitySeconds["walking"], seconds > 0 else { return nil }
        return Double(activitySteps["walking"] ?? 0) / seconds * 60
    }

    /// Step-free: false steps per hour of recording.
    public var stepsPerHour: Double { recordedSeconds > 0 ? Double(detectedCount) / recordedSeconds * 3600 : 0 }

    /// Scores grouped by `key`, each group summarised, the groups in natural order ("p2" before "p10").
    public static func grouped(_ scores: [TraceScore], by key: (TraceScore) -> String) -> [(key: String, summary: ScoreSummary)] {
        var groups: [String: [TraceScore]] = [:]
        for score in scores { groups[key(score), default: []].append(score) }
        return groups.keys.sorted(by: naturalOrder).map { ($0, ScoreSummary(groups[$0]!)) }
    }

    /// "p2" < "p10": runs of digits compare by value, the rest as text.
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        func parts(_ s: String) -> [(text: String, number: Int?)] {
            var result: [(String, Int?)] = []
            var current = "", digits = false
            for c in s {
                let digit = c.isASCII && c.isNumber
                if !current.isEmpty && digit != digits {
                    result.append((current, digits ? Int(current) : nil))
                    current = ""
                }
                digits = digit
                current.append(c)
            }
            if !current.isEmpty { result.append((current, digits ? Int(current) : nil)) }
            return result
        }
        for (x, y) in zip(parts(a), parts(b)) {
            if let m = x.number, let n = y.number, m != n { return m < n }
            if x.text != y.text { return x.text < y.text }
        }
        return parts(a).count < parts(b).count
    }
}
