import Foundation
import Logging
import NIOConcurrencyHelpers
import Timekeeping

/// Logs anything a client (or another outsider) can trigger at most once per cause per interval, so that a
/// flood of refused requests cannot fill the journal: the first occurrence is logged at once, the repeats in
/// the same interval are counted, and the count is logged when the interval is over ("... 9,999 more times in
/// the last 10 s"), whether or not the flood goes on. Safe to use from any queue.
public final class RateLimitedLog: Sendable {
    private struct Cause {
        var level: Logger.Level
        var message: String
        var windowStart: Double
        var suppressed: Int
    }

    public let interval: TimeInterval
    private let logger: Logger
    private let clock: any DaemonClock
    private let causes = NIOLockedValueBox<[String: Cause]>([:])
    /// At most this many causes are remembered; a flood of distinct causes (one per uid, say) is itself capped.
    private let maximumCauses: Int

    /// The counts are written by a timer of `clock` when an interval ends (a test moves a manual one).
    public init(logger: Logger, interval: TimeInterval = 10, maximumCauses: Int = 256,
                clock: any DaemonClock = SystemClock()) {
        self.logger = logger
        self.interval = interval
        self.maximumCauses = maximumCauses
        self.clock = clock
    }

    /// Logs `message` unless `cause` was logged less than `interval` ago; then it is only counted.
    public func log(_ level: Logger.Level, cause: String, _ message: @autoclosure () -> String) {
        let now = clock.monotonicSeconds
        var lines: [(Logger.Level, String)] = []
        var flushAfter: Double?
        causes.withLockedValue { causes in
            if var known = causes[cause] {
                if now - known.windowStart < interval {
                    known.suppressed += 1
                    causes[cause] = known
                    if known.suppressed == 1 { flushAfter = known.windowStart + interval - now }
                    return
                }
                if known.suppressed > 0 { lines.append((known.level, Self.summary(known, interval: interval))) }
            } else if causes.count >= maximumCauses {
                lines += Self.expire(&causes, now: now, interval: interval)
                if causes.count >= maximumCauses {
                    // Every slot is busy within its interval: count this one under a shared cause.
                    let overflow = "(other causes)"
                    var shared = causes[overflow] ?? Cause(level: level, message: "more client-triggered events of other kinds",
                                                           windowStart: now, suppressed: 0)
                    shared.suppressed += 1
                    causes[overflow] = shared
                    if shared.suppressed == 1 { flushAfter = interval }
                    return
                }
            }
            let text = message()
            causes[cause] = Cause(level: level, message: text, windowStart: now, suppressed: 0)
            lines.append((level, text))
        }
        for (level, line) in lines { logger.log(level: level, "\(line)") }
        if let delay = flushAfter {
            // One timer per interval that has repeats to report; a quiet log sets none.
            clock.run(after: max(0, delay) + 0.01, on: .global()) { [weak self] in self?.flush() }
        }
    }

    /// Writes the counts of causes whose interval is over and forgets them.
    public func flush() {
        let now = clock.monotonicSeconds
        let lines = causes.withLockedValue { Self.expire(&$0, now: now, interval: interval) }
        for (level, line) in lines { logger.log(level: level, "\(line)") }
    }

    private static func expire(_ causes: inout [String: Cause], now: Double, interval: TimeInterval) -> [(Logger.Level, String)] {
        var lines: [(Logger.Level, String)] = []
        for (key, cause) in causes where now - cause.windowStart >= interval {
            if cause.suppressed > 0 { lines.append((cause.level, summary(cause, interval: interval))) }
            causes[key] = nil
        }
        return lines
    }

    private static func summary(_ cause: Cause, interval: TimeInterval) -> String {
        let times = cause.suppressed == 1 ? "once more" : "\(cause.suppressed) more times"
        return "\(cause.message) (\(times) in the last \(Int(interval.rounded())) s)"
    }
}
