import Foundation

/// Decides whether a report from gpsd is a new, current fix. As the seed ignores a cached location older
/// than the start of updates: gpsd may hand a new client its last cached fix, so after (re)connecting
/// nothing counts until the receiver's fix time moves on; afterwards a fix must be later than the last
/// accepted one. The receiver's own clock orders fixes (replayed logs carry old dates); the local clock only
/// bounds them from above, so that one fix dated in the future cannot make every later one look stale.
public struct FixGate: Sendable {
    public enum Verdict: Equatable, Sendable {
        /// A new fix: later than everything accepted so far.
        case accepted
        /// Another report for the fix already accepted (gpsd may send several TPVs per epoch as
        /// sentences arrive): it completes the current position but is not a new point.
        case refines
        /// The report carries no position (no fix, or no latitude/longitude).
        case noFix
        /// The report has no time, so it cannot be ordered.
        case noTime
        /// The first report after connecting, or one no later than it: possibly gpsd's cached fix.
        case awaitingTimeToMoveOn
        /// Earlier than the last accepted fix.
        case stale
        /// Dated more than `maximumAheadSeconds` after it arrived, and not (yet) part of a run long enough to
        /// follow the receiver's clock: one wrong date.
        case future
        /// eph or epv negative, not finite, or beyond `maximumErrorMeters`: an error estimate no receiver means.
        case implausibleError
    }

    /// How far ahead of the local clock a fix time may be: receivers stamp the epoch they solved, which
    /// reaches us a fraction of a second later, so only a wrong date (or a wrong system clock) is further.
    public static let maximumAheadSeconds = 5.0
    /// gpsd reports eph/epv in metres; a consumer receiver without a fix worse than this has no fix at all.
    public static let maximumErrorMeters = 100_000.0
    /// A receiver whose dates stay ahead, fix after fix, for this many fixes spanning this long is followed on
    /// its own clock: gpsd dates a receiver (or a replayed log) from before its own build 1024 weeks later, a
    /// GPS week rollover it cannot tell apart, and the positions are still right. One stray date never lasts
    /// that long, so it never becomes the time to beat.
    public static let followAheadAfterFixes = 5
    public static let followAheadAfterSeconds = 10.0

    private var lastAccepted: Date?
    private var baseline: Date?
    private var awaitingMove = true
    /// The run of consecutive, increasing fixes dated ahead of the local clock: its first and last time.
    private var aheadRun: (first: Date, last: Date, count: Int)?
    /// True while the receiver's dates run ahead of the local clock and are followed (see above).
    public private(set) var followsReceiverClock = false
    /// Reports refused as implausible (`future`, `implausibleError`) since start.
    public private(set) var rejected = 0

    public init() {}

    /// A new connection to gpsd: its first report may be an old cached one.
    public mutating func connected() {
        awaitingMove = true
        baseline = nil
    }

    public mutating func judge(_ fix: Fix) -> Verdict {
        guard fix.hasPosition else { return .noFix }
        guard let time = fix.time else { return .noTime }
        // Implausible reports are refused before they touch the ordering state: they must not become
        // the baseline or the last accepted time.
        if Self.implausibleError(fix) {
            rejected += 1
            return .implausibleError
        }
        if time.timeIntervalSince(fix.arrival) > Self.maximumAheadSeconds {
            guard followsReceiverClock || followAhead(time) else {
                rejected += 1
                return .future
            }
        } else {
            aheadRun = nil
            if followsReceiverClock {
                // The receiver's dates agree with ours again: its earlier, later-dated fixes are no bar.
                followsReceiverClock = false
                lastAccepted = nil
            }
        }
        if awaitingMove {
            guard let baseline else {
                self.baseline = time
                return .awaitingTimeToMoveOn
            }
            guard time > baseline else { return .awaitingTimeToMoveOn }
            awaitingMove = false
        }
        if let last = lastAccepted {
            if time < last { return .stale }
            if time == last { return .refines }
        }
        lastAccepted = time
        return .accepted
    }

    /// Notes a fix dated ahead; true once the run of them is long enough to follow the receiver's clock.
    private mutating func followAhead(_ time: Date) -> Bool {
        if let run = aheadRun, time > run.last {
            aheadRun = (run.first, time, run.count + 1)
        } else {
            aheadRun = (time, time, 1)
        }
        guard let run = aheadRun, run.count >= Self.followAheadAfterFixes,
              run.last.timeIntervalSince(run.first) >= Self.followAheadAfterSeconds else { return false }
        followsReceiverClock = true
        aheadRun = nil
        return true
    }

    /// eph or epv negative, not finite or beyond `maximumErrorMeters`: an estimate no receiver means.
    static func implausibleError(_ fix: Fix) -> Bool {
        for error in [fix.ephMeters, fix.epvMeters] {
            guard let error else { continue }
            if !error.isFinite || error < 0 || error > maximumErrorMeters { return true }
        }
        return false
    }
}
