/// Undoes the two glitches of foot-switch ground truth, for a diagnostic second opinion on a benchmark.
///
/// In the Oxford recordings a switch sometimes fires twice within one footfall (events 0.09–0.29 s apart,
/// faster than anyone walks) and sometimes not at all: a gap of two step intervals in a steady walk, or a
/// switch that stays silent for a dozen steps (the intervals of a stretch double: 1.0 s in a 0.5 s walk).
/// The benchmark scores foot-switch recordings against this repaired truth and prints the recorded-truth
/// figure beside it. It never feeds back into the detector.
public enum GroundTruthRepair {
    /// Events closer than this to the previous kept event are bounces (4 steps per second is a sprint).
    public static let bounceSeconds = 0.3

    public static func repaired(_ times: [Double]) -> [Double] {
        var kept: [Double] = []
        kept.reserveCapacity(times.count)
        for t in times.sorted() where kept.isEmpty || t - kept[kept.count - 1] >= bounceSeconds { kept.append(t) }
        guard kept.count > 2 else { return kept }
        let intervals = zip(kept.dropFirst(), kept).map { $0 - $1 }
        var walking = intervals.filter { $0 < 2 }
        let walk = walking.isEmpty ? .infinity : median(&walking)
        var result = [kept[0]]
        for k in 1..<kept.count {
            // The local step interval: the median of about a dozen intervals around this one; where that is itself
            // doubled (one switch silent for a stretch), the walk's own median step interval.
            var window = Array(intervals[max(0, k - 6)..<min(intervals.count, k + 5)])
            var local = median(&window)
            if local > 1.6 * walk { local = walk }
            let gap = kept[k] - kept[k - 1]
            if gap > 1.6 * local && gap < 2.4 * local && gap < 2 { result.append(kept[k - 1] + gap / 2) }
            result.append(kept[k])
        }
        return result
    }
}
