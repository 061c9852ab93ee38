import Dispatch
import Foundation
import Locking

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
    /// Blocks the calling thread, which holds `condition`'s lock, until the condition is signalled or this clock's
    /// monotonic time reaches `deadline`; false when the deadline has passed. A source's thread sleeps here between
    /// reads (a gpsd retry, a replay's next batch), so that a test's clock, not real time, says when it wakes.
    /// Wake-ups may be spurious: the caller looks at its state again, as with any condition.
    func wait(on condition: NSCondition, untilMonotonic deadline: Double) -> Bool
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
    /// Runs `body` on `queue` once, `seconds` from now. The timer keeps itself alive until it has fired or is
    /// cancelled, so the caller may drop what this returns (a fire-and-forget hop) or keep it to cancel.
    @discardableResult
    public func run(after seconds: Double, on queue: DispatchQueue, leewaySeconds: Double = 0,
                    _ body: @escaping @Sendable () -> Void) -> any ClockTimer {
        let pending = Locked<(any ClockTimer)?>(nil)
        let timer = makeTimer(queue: queue) {
            guard pending.withLock({ $0 }) != nil else { return }   // cancelled as it expired
            body()
            pending.withLock { $0 = nil }
        }
        pending.withLock { $0 = timer }
        timer.schedule(after: seconds, repeating: nil, leewaySeconds: leewaySeconds)
        return OneShotTimer(timer: timer, pending: pending)
    }
}

extension DaemonClock {
    /// Suspends the calling task for `seconds` of this clock; throws `CancellationError` at once when the task is
    /// cancelled meanwhile (as `Task.sleep` does).
    public func sleep(seconds: Double) async throws {
        let resumed = Locked<CheckedContinuation<Void, any Error>?>(nil)
        let timer = Locked<(any ClockTimer)?>(nil)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                resumed.withLock { $0 = continuation }
                let fired = run(after: seconds, on: .global()) {
                    resumed.withLock { pending in
                        pending?.resume()
                        pending = nil
                    }
                }
                timer.withLock { $0 = fired }
                if Task.isCancelled {
                    fired.cancel()
                    resumed.withLock { pending in
                        pending?.resume(throwing: CancellationError())
                        pending = nil
                    }
                }
            }
        } onCancel: {
            timer.withLock { $0?.cancel() }
            resumed.withLock { pending in
                pending?.resume(throwing: CancellationError())
                pending = nil
            }
        }
    }
}

/// `run(after:)`'s timer: held by its own handler until it fires; `cancel` lets it go.
private final class OneShotTimer: ClockTimer {
    private let timer: any ClockTimer
    private let pending: Locked<(any ClockTimer)?>

    init(timer: any ClockTimer, pending: Locked<(any ClockTimer)?>) {
        self.timer = timer
        self.pending = pending
    }

    func schedule(after seconds: Double, repeating: Double?, leewaySeconds: Double) {
        pending.withLock { $0 = timer }
        timer.schedule(after: seconds, repeating: repeating, leewaySeconds: leewaySeconds)
    }

    func clear() { timer.clear() }

    func cancel() {
        timer.cancel()
        pending.withLock { $0 = nil }
    }
}
