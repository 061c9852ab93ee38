/// Keeps a long recording's clock usable for analysis: gaps stay gaps, a clock that jumps back is carried on.
///
/// A recorder that pauses (a full buffer, a battery swap) leaves a gap: the time between two samples further
/// apart than `maximumGapSeconds` (the resampler's, so that what it does not interpolate is what counts as
/// not recorded) is reported and left out of the recorded time. A clock that jumps back (an RTC reset, files
/// joined in the wrong order) would put the following samples on top of earlier ones; they are shifted so that
/// they follow on one sample interval after the last sample, and the jump is reported. A single row out of
/// order (the row after it follows on from the rows before) is a glitch, not a jump: only it is set aside.
public struct RecordingTimeline: Sendable {
    public enum Event: Equatable, Sendable {
        /// Before the sample at `index` in the batch: nothing was recorded from `from` to `to` (analysis clock).
        case gap(index: Int, from: Double, to: Double)
        /// Before the sample at `index` the clock went back by `seconds`; from there on times are shifted.
        case clockBack(index: Int, seconds: Double)
    }

    public let maximumGapSeconds: Double
    /// Added to every time from the first backwards jump on.
    public private(set) var shiftSeconds = 0.0
    private var last: Double?
    private var segmentStart: Double?
    private var coveredUntil: Double?
    private var interval = 0.01
    public private(set) var gaps = 0
    public private(set) var gapSeconds = 0.0
    public private(set) var clockJumpsBack = 0
    /// Single rows whose time went back while the rows around them did not: each is given the time of the row
    /// before (and so dropped by the resampler), and the rest of the file keeps its times.
    public private(set) var rowsOutOfOrder = 0
    /// The time (analysis clock) of a row that went back, until the next row says what it was.
    private var heldBack: Double?

    public init(maximumGapSeconds: Double = 0.5) { self.maximumGapSeconds = maximumGapSeconds }

    /// The newest sample's time on the analysis clock.
    public var latestTime: Double? { last }

    /// Repairs a batch's times in place; reports gaps and jumps back, and the recorded spans to `cover`.
    public mutating func repair(_ samples: inout [Sample], cover: (Double, Double) -> Void,
                                event: (Event) -> Void) {
        // Where the held row is in this batch (nil when it came in an earlier one).
        var heldIndex: Int?
        for i in samples.indices {
            var t = samples[i].time
            guard t.isFinite else { continue }   // the pipeline drops it
            t += shiftSeconds
            if let previous = last {
                var step = t - previous
                if step >= 0, heldBack != nil {
                    // The row held was a glitch: this one follows on from the rows before it, which keep their times.
                    heldBack = nil
                    rowsOutOfOrder += 1
                } else if step < 0 {
                    if let back = heldBack, t >= back {
                        // The row held was no glitch: the clock went back there. It and the rows after follow on.
                        heldBack = nil
                        clockJumpsBack += 1
                        event(.clockBack(index: heldIndex ?? i, seconds: previous - back))
                        shiftSeconds += previous - back + interval
                        if let heldIndex {
                            samples[heldIndex].time = previous + interval
                            last = previous + interval
                        }
                        t += previous - back + interval
                        step = t - (last ?? previous)
                    } else {
                        // Held at the time of the row before (the resampler drops a repeated time) until the
                        // next row says whether it was a glitch or a clock set back.
                        if heldBack != nil { rowsOutOfOrder += 1 }
                        heldBack = t
                        heldIndex = i
                        samples[i].time = previous
                        continue
                    }
                }
                let before = last ?? previous
                if step > maximumGapSeconds {
                    gaps += 1
                    gapSeconds += step
                    event(.gap(index: i, from: before, to: t))
                    closeSegment(at: before, cover: cover)
                    segmentStart = t
                } else if step > 0 {
                    interval = step
                }
            } else {
                segmentStart = t
            }
            samples[i].time = t
            last = t
        }
        if let start = segmentStart, let end = last {
            let from = max(start, coveredUntil ?? start)
            if end > from { cover(from, end) }
            coveredUntil = end
        }
    }

    private mutating func closeSegment(at end: Double, cover: (Double, Double) -> Void) {
        guard let start = segmentStart else { return }
        let from = max(start, coveredUntil ?? start)
        if end > from { cover(from, end) }
        coveredUntil = end
    }
}
