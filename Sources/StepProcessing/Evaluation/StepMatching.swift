/// How well detected step instants agree with ground-truth ones.
public struct StepAccuracy: Equatable, Sendable {
    public var trueCount: Int
    public var detectedCount: Int
    /// Detected steps paired one-to-one with a true step.
    public var matchedCount: Int
    /// The detector's median delay, seconds, subtracted before pairing.
    public var lagSeconds: Double

    /// |detected − true| / true, in percent (0 when both are empty).
    public var absolutePercentageError: Double {
        guard trueCount > 0 else { return detectedCount == 0 ? 0 : 100 }
        return Double(abs(detectedCount - trueCount)) / Double(trueCount) * 100
    }

    public var precision: Double { detectedCount == 0 ? (trueCount == 0 ? 1 : 0) : Double(matchedCount) / Double(detectedCount) }
    public var recall: Double { trueCount == 0 ? (detectedCount == 0 ? 1 : 0) : Double(matchedCount) / Double(trueCount) }

    /// Step F1: the harmonic mean of precision and recall.
    public var f1: Double {
        if trueCount == 0 && detectedCount == 0 { return 1 }
        return 2 * Double(matchedCount) / Double(trueCount + detectedCount)
    }
}

/// Pairs detected steps with true ones, as the benchmark scores detectors.
///
/// A causal filter delays every step by about the same time, which says nothing about counting; so the
/// detector's median lag (each detected step against its nearest true step) is subtracted first. Then steps
/// are paired one-to-one in time order when they lie within `toleranceSeconds` of each other.
public enum StepMatching {
    public static func accuracy(trueTimes: [Double], detectedTimes: [Double],
                                toleranceSeconds: Double = 0.25) -> StepAccuracy {
        let truth = trueTimes.sorted()
        let detected = detectedTimes.sorted()
        let lag = medianLag(trueTimes: truth, detectedTimes: detected)
        return pair(truth: truth, detected: detected, lagSeconds: lag, toleranceSeconds: toleranceSeconds)
    }

    /// Scores only the steps inside `window` (seconds), such as a trial's walking bout: true steps by their
    /// time, detected steps by their time less the detector's lag over the whole trace, with the tolerance as a
    /// margin on both sides (a step stamped just before the bout's first heel strike is that step).
    public static func accuracy(trueTimes: [Double], detectedTimes: [Double], within window: ClosedRange<Double>,
                                toleranceSeconds: Double = 0.25) -> StepAccuracy {
        let truth = trueTimes.sorted()
        let detected = detectedTimes.sorted()
        let lag = medianLag(trueTimes: truth, detectedTimes: detected)
        let margin = (window.lowerBound - toleranceSeconds)...(window.upperBound + toleranceSeconds)
        return pair(truth: truth.filter { window.contains($0) }, detected: detected.filter { margin.contains($0 - lag) },
                    lagSeconds: lag, toleranceSeconds: toleranceSeconds)
    }

    /// Scores only the steps inside any of `windows` (the segments of one activity, such as the stairs of a walk),
    /// each as `accuracy(within:)` scores one window, with the lag over the whole trace; the counts are summed.
    public static func accuracy(trueTimes: [Double], detectedTimes: [Double], within windows: [ClosedRange<Double>],
                                toleranceSeconds: Double = 0.25) -> StepAccuracy {
        let truth = trueTimes.sorted()
        let detected = detectedTimes.sorted()
        let lag = medianLag(trueTimes: truth, detectedTimes: detected)
        var total = StepAccuracy(trueCount: 0, detectedCount: 0, matchedCount: 0, lagSeconds: lag)
        for window in windows {
            let margin = (window.lowerBound - toleranceSeconds)...(window.upperBound + toleranceSeconds)
            let part = pair(truth: truth.filter { window.contains($0) }, detected: detected.filter { margin.contains($0 - lag) },
                            lagSeconds: lag, toleranceSeconds: toleranceSeconds)
            total.trueCount += part.trueCount
            total.detectedCount += part.detectedCount
            total.matchedCount += part.matchedCount
        }
        return total
    }

    /// Pairs sorted lists one-to-one in time order, within the tolerance once the lag is subtracted.
    static func pair(truth: [Double], detected: [Double], lagSeconds lag: Double, toleranceSeconds: Double) -> StepAccuracy {
        StepAccuracy(trueCount: truth.count, detectedCount: detected.count,
                     matchedCount: pairedTruth(truth: truth, detected: detected, lagSeconds: lag, toleranceSeconds: toleranceSeconds).count,
                     lagSeconds: lag)
    }

    /// The true steps that `pair` pairs with a detected one, in order.
    static func pairedTruth(truth: [Double], detected: [Double], lagSeconds lag: Double, toleranceSeconds: Double) -> [Double] {
        var i = 0, j = 0
        var paired: [Double] = []
        while i < truth.count && j < detected.count {
            let d = detected[j] - lag
            if abs(d - truth[i]) <= toleranceSeconds {
                paired.append(truth[i]); i += 1; j += 1
            } else if d < truth[i] {
                j += 1
            } else {
                i += 1
            }
        }
        return paired
    }

    /// The median over detected steps of (detected − nearest true), seconds; 0 if either list is empty.
    /// Both lists must be sorted.
    public static func medianLag(trueTimes: [Double], detectedTimes: [Double]) -> Double {
        guard !trueTimes.isEmpty, !detectedTimes.isEmpty else { return 0 }
        var offsets: [Double] = []
        offsets.reserveCapacity(detectedTimes.count)
        var k = 0
        for d in detectedTimes {
            while k + 1 < trueTimes.count && trueTimes[k + 1] <= d { k += 1 }
            var best = d - trueTimes[k]
            if k + 1 < trueTimes.count, abs(trueTimes[k + 1] - d) <= abs(best) { best = d - trueTimes[k + 1] }
            offsets.append(best)
        }
        return median(&offsets)
    }
}
