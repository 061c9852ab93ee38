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

    /// The trailing send went out at `now`.
    mutating func trailingSent(now: Double) {
        trailingDue = nil
        lastSent = now
    }

    /// A send outside the throttle (the last figures of a walk): the next one waits the interval again.
    mutating func forced(now: Double) {
        lastSent = now
    }
}
