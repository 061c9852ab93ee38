/// At most one message per `intervalSeconds`; the newest value offered meanwhile goes out when the interval
/// ends (a trailing send), so the retained message a subscriber finds is never older than the interval.
/// Times are seconds on any monotonic clock.
struct PublishThrottle {
    enum Decision: Equatable {
        /// Publish now.
        case now
        /// Publish the newest value at this time (start a timer).
        case at(Double)
        /// A trailing send is already due; it will carry the newest value.
        case pending
    }

    let intervalSeconds: Double
    private var lastSent = -Double.infinity
    private var trailingDue: Double?

    init(intervalSeconds: Double) { self.intervalSeconds = intervalSeconds }

    mutating func offer(now: Double) -> Decision {
        if trailingDue != nil { return .pending }
        if now - lastSent >= intervalSeconds {
            lastSent = now
            return .now
        }
        let due = lastSent + intervalSeconds
        trailingDue = due
        return .at(due)
    }

    /// The timer of the trailing send due at `due` fired at `now`: whether to send. Not when a forced send has
    /// carried the newest value since (it would follow that one within the interval), nor for a timer that a
    /// later trailing send has taken the place of.
    mutating func trailingFired(due: Double, now: Double) -> Bool {
        guard trailingDue == due else { return false }
        trailingDue = nil
        lastSent = now
        return true
    }

    /// A send outside the throttle (on connecting, the last figures of a walk): it carries the newest value, so
    /// a trailing send pending is dropped, and the next one waits the interval again.
    mutating func forced(now: Double) {
        lastSent = now
        trailingDue = nil
    }
}
