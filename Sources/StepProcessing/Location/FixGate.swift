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
        /// Dated more than `maximumAheadSeconds` after it arrived: a receiver (or a log) with a wrong date.
        case future
        /// eph or epv negative, not finite, or beyond `maximumErrorMeters`: an error estimate no receiver means.
        case implausibleError
    }

    /// How far ahead of the local clock a fix time may be: receivers stamp the epoch they solved, which
    /// reaches us a fraction of a second later, so only a wrong date (or a wrong system clock) is further.
    public static let maximumAheadSeconds = 5.0
    /// gpsd reports eph/epv in metres; a consumer receiver without a fix worse than this has no fix at all.
    public static let maximumErrorMeters = 100_000.0

    private var lastAccepted: Date?
    private var baseline: Date?
    private var awaitingMove = true
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
        if let refusal = Self.implausibility(of: fix, time: time) {
            rejected += 1
            return refusal
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

    /// `future` or `implausibleError` for a report no receiver could mean, else nil. `arrival` is "now".
    static func implausibility(of fix: Fix, time: Date) -> Verdict? {
        if time.timeIntervalSince(fix.arrival) > maximumAheadSeconds { return .future }
        for error in [fix.ephMeters, fix.epvMeters] {
            guard let error else { continue }
            if !error.isFinite || error < 0 || error > maximumErrorMeters { return .implausibleError }
        }
        return nil
    }
}
