import Foundation

/// Decides whether a report from gpsd is a new, current fix. As the seed ignores a cached location older
/// than the start of updates: gpsd may hand a new client its last cached fix, so after (re)connecting
/// nothing counts until the receiver's fix time moves on; afterwards a fix must be later than the last
/// accepted one. Only the receiver's own clock is compared (replayed logs carry old dates).
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
    }

    private var lastAccepted: Date?
    private var baseline: Date?
    private var awaitingMove = true

    public init() {}

    /// A new connection to gpsd: its first report may be an old cached one.
    public mutating func connected() {
        awaitingMove = true
        baseline = nil
    }

    public mutating func judge(_ fix: Fix) -> Verdict {
        guard fix.hasPosition else { return .noFix }
        guard let time = fix.time else { return .noTime }
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
}
