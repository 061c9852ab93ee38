import Dispatch
import Foundation
import Locking
import Logging

/// What any HTTP client can make stepd-web log (a refused reset, a connect the daemon's full queue refused),
/// at most once per cause per `intervalSeconds`: the first at once, the repeats counted and told in one line
/// when the interval is over ("... (19,999 more times in the last 10 s)"), as the daemon's RateLimitedLog does,
/// so that a flood of wrong tokens cannot fill the journal (issue 39, point 7).
final class RateLimitedNotice: Sendable {
    private struct Cause {
        var message: String
        var windowStart: Double
        var suppressed: Int
    }

    let intervalSeconds: Double
    private let logger: Logger
    private let causes = Locked<[String: Cause]>([:])
    /// A flood of distinct causes is capped too: past this many, new ones are counted under one.
    private static let maximumCauses = 64

    init(logger: Logger, intervalSeconds: Double = 10) {
        self.logger = logger
        self.intervalSeconds = intervalSeconds
    }

    /// Logs `message` at notice level unless `cause` was logged less than the interval ago; then counts it.
    func notice(cause: String, _ message: @autoclosure () -> String) {
        let now = Self.monotonicSeconds()
        let (lines, firstRepeat) = causes.withLock { causes -> ([String], Bool) in
            var key = cause
            if causes[key] == nil, causes.count >= Self.maximumCauses { key = "(other causes)" }
            if var known = causes[key], now - known.windowStart < intervalSeconds {
                known.suppressed += 1
                causes[key] = known
                return ([], known.suppressed == 1)
            }
            let summary = causes[key].flatMap { $0.suppressed > 0 ? Self.summary($0, intervalSeconds) : nil }
            let text = key == cause ? message() : "more refusals of other kinds"
            causes[key] = Cause(message: text, windowStart: now, suppressed: 0)
            return ([summary, text].compactMap { $0 }, false)
        }
        for line in lines { logger.notice("\(line)") }
        if firstRepeat {
            // One timer per interval that has repeats to tell; a quiet log sets none.
            DispatchQueue.global().asyncAfter(deadline: .now() + intervalSeconds + 0.01) { [self] in flush() }
        }
    }

    /// Tells the counts of the causes whose interval is over, and forgets those causes.
    func flush() {
        let now = Self.monotonicSeconds()
        let lines = causes.withLock { causes -> [String] in
            var lines: [String] = []
            for (key, cause) in causes where now - cause.windowStart >= intervalSeconds {
                if cause.suppressed > 0 { lines.append(Self.summary(cause, intervalSeconds)) }
                causes[key] = nil
            }
            return lines
        }
        for line in lines { logger.notice("\(line)") }
    }

    private static func summary(_ cause: Cause, _ intervalSeconds: Double) -> String {
        let times = cause.suppressed == 1 ? "once more" : "\(cause.suppressed) more times"
        return "\(cause.message) (\(times) in the last \(Int(intervalSeconds.rounded())) s)"
    }

    private static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
