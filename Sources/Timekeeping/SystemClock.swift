import Dispatch
import Foundation

/// The production clock: Foundation's wall clock, the kernel's monotonic clock, dispatch timers, and timerfds
/// for quiet deadlines.
public struct SystemClock: DaemonClock {
    public init() {}

    public var now: Date { Date() }

    public var monotonicSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    public func makeTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        DispatchClockTimer(queue: queue, handler: handler)
    }

    public func makeWallTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        DispatchClockTimer(queue: queue, wall: true, handler: handler)
    }

    public func makeQuietDeadline(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        QuietDeadline(queue: queue, handler: handler)
    }

    /// The condition's own timed wait: no timer, no thread but the sleeper's is woken. NSCondition takes a wall
    /// date; the span is measured on the monotonic clock and capped, as a date far out of range traps.
    public func wait(on condition: NSCondition, untilMonotonic deadline: Double) -> Bool {
        let remaining = deadline - monotonicSeconds
        guard remaining > 0 else { return false }
        return condition.wait(until: now.addingTimeInterval(min(remaining, 365 * 86_400)))
    }

    /// The dispatch time `seconds` from now: the bound of a real wait for another thread (a semaphore, a group),
    /// which no manual clock can end, so not a `DaemonClock` matter.
    public static func dispatchDeadline(after seconds: Double) -> DispatchTime {
        .now() + max(0, seconds)
    }

    /// Blocks the calling thread for `seconds`: a client's pause between attempts to reach the daemon, not a
    /// daemon's timer (those are `DaemonClock` timers, which a test can move).
    public static func pause(seconds: Double) {
        usleep(useconds_t(max(0, seconds) * 1e6))
    }
}

/// A dispatch timer: libdispatch programs it on its timer thread (one wake-up there per `schedule`).
// unchecked: `timer` is set once, and a dispatch source's calls are safe from any thread.
final class DispatchClockTimer: ClockTimer, @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let wall: Bool

    init(queue: DispatchQueue, wall: Bool = false, handler: @escaping @Sendable () -> Void) {
        self.wall = wall
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler(handler: handler)
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    deinit { timer.cancel() }

    func schedule(after seconds: Double, repeating: Double?, leewaySeconds: Double) {
        let leeway = DispatchTimeInterval.nanoseconds(Int(max(0, leewaySeconds) * 1e9))
        if wall {
            let deadline = DispatchWallTime.now() + max(0, seconds)
            if let repeating {
                timer.schedule(wallDeadline: deadline, repeating: repeating, leeway: leeway)
            } else {
                timer.schedule(wallDeadline: deadline, leeway: leeway)
            }
            return
        }
        let deadline = DispatchTime.now() + max(0, seconds)
        if let repeating {
            timer.schedule(deadline: deadline, repeating: repeating, leeway: leeway)
        } else {
            timer.schedule(deadline: deadline, leeway: leeway)
        }
    }

    func clear() { timer.schedule(deadline: .distantFuture) }

    func cancel() { timer.cancel() }
}
