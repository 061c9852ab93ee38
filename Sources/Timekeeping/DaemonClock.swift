import Dispatch
import Foundation

/// Where every part of stepd that depends on time reads it and sets its timers: the wall clock, the monotonic
/// clock, and timers that run a handler on a queue. Production code takes one as an argument (`SystemClock`
/// by default); tests hand in a manual clock that they move by hand, so that a commit every 2 s, a local
/// midnight, an MQTT back-off or a stale GPS fix is tested in milliseconds, without waiting on real time.
///
/// Only the production clock (SystemClock.swift, QuietDeadline.swift) reads `Date()` or `DispatchTime.now()`;
/// ClockUseTests keeps it so.
public protocol DaemonClock: Sendable {
    /// The wall clock: what steps, minutes and days are stamped with. It may step (NTP, a user).
    var now: Date { get }
    /// Seconds on a clock that never steps, from an arbitrary origin: what durations are measured on.
    var monotonicSeconds: Double { get }
    /// A timer whose handler runs on `queue`; idle until scheduled.
    func makeTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer
    /// A timer whose deadline is on the wall clock, so that it catches up after the board slept (a minute's end).
    func makeWallTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer
    /// A one-shot timer that any thread moves with one system call and no wake-up of anyone (a timerfd):
    /// for deadlines that move with every batch of samples (QuietDeadline.swift). Idle until scheduled.
    func makeQuietDeadline(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer
}

/// A timer of a `DaemonClock`. Every call is safe from any thread; the handler runs on the timer's queue, and may
/// run once for a schedule that was moved or cleared just as it expired: it checks what it is for.
public protocol ClockTimer: AnyObject, Sendable {
    /// Fires `seconds` from now (at once for zero or less), then every `repeating` seconds if given, replacing
    /// any schedule set before. `leewaySeconds` is how late it may fire, for the system to group wake-ups.
    func schedule(after seconds: Double, repeating: Double?, leewaySeconds: Double)
    /// Not until the next `schedule`.
    func clear()
    /// For good: no handler starts after it returns but one already under way.
    func cancel()
}

extension ClockTimer {
    /// Fires once, `seconds` from now.
    public func schedule(after seconds: Double) { schedule(after: seconds, repeating: nil, leewaySeconds: 0) }
}

extension DaemonClock {
    /// Runs `body` on `queue` once, `seconds` from now; the returned timer cancels it.
    @discardableResult
    public func run(after seconds: Double, on queue: DispatchQueue, leewaySeconds: Double = 0,
                    _ body: @escaping @Sendable () -> Void) -> any ClockTimer {
        let timer = makeTimer(queue: queue, handler: body)
        timer.schedule(after: seconds, repeating: nil, leewaySeconds: leewaySeconds)
        return timer
    }
}
