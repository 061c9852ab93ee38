/// Undoes the two glitches of foot-switch ground truth, for a diagnostic second opinion on a benchmark.
///
/// In the Oxford recordings a switch sometimes fires twice within one footfall (events 0.09–0.29 s apart,
/// faster than anyone walks) and sometimes not at all (a gap of two step intervals in a steady walk). The
/// benchmark scores against the recorded truth; this repaired truth is printed beside it so that a reader
/// can tell detector errors from switch errors. It never feeds back into the detector.
public enum GroundTruthRepair {
    /// Events closer than this to the previous kept event are bounces (4 steps per second is a sprint).
    public static let bounceSeconds = 0.3

    public static func repaired(_ times: [Double]) -> [Double] {
        var kept: [Double] = []
        kept.reserveCapacity(times.count)
        for t in times.sorted() where kept.isEmpty || t - kept[kept.count - 1] >= bounceSeconds { kept.append(t) }
        guard kept.count > 2 else { return kept }
        let intervals = zip(kept.dropFirst(), kept).map { $0 - $1 }
        var result = [kept[0]]
        for k in 1..<kept.count {
            // The local step interval: the median of about a dozen intervals around this one.
            var window = Array(intervals[max(0, k - 6)..<min(intervals.count, k + 5)])
            let local = median(&window)
            let gap = kept[k] - kept[k - 1]
            if gap > 1.6 * local && gap < 2.4 * local && gap < 2 { result.append(kept[k - 1] + gap / 2) }
            result.append(kept[k])
        }
        return result
    }
}
