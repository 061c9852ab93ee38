import Dispatch
import Foundation
import Locking
import Timekeeping

/// A clock that moves only when a test moves it: `advance(by:)` sets the wall and monotonic clocks forward and
/// runs, in order of their deadlines, the handlers of the timers that came due, each on its own queue, waiting
/// for each one. A handler that schedules a timer within the advanced span runs in the same advance, as it would
/// in real time. `setWall(_:)` steps the wall clock alone, as NTP or a user would.
public final class ManualClock: DaemonClock {
    private struct Entry {
        weak var timer: ManualTimer?
        var due: Double
    }
    private struct State {
        var wall: Date
        var monotonic: Double
        var timers: [ObjectIdentifier: Entry] = [:]
        /// Threads asleep in `wait(on:untilMonotonic:)`, by a number of their own.
        var sleepers: [Int: (condition: NSCondition, deadline: Double)] = [:]
        var lastSleeper = 0
    }
    private let state: Locked<State>

    public init(wall: Date = Date(timeIntervalSince1970: 1_790_000_000), monotonic: Double = 1_000) {
        state = Locked(State(wall: wall, monotonic: monotonic))
    }

    public var now: Date { state.withLock { $0.wall } }
    public var monotonicSeconds: Double { state.withLock { $0.monotonic } }

    public func makeTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        ManualTimer(clock: self, queue: queue, handler: handler)
    }

    /// Moves with the monotonic clock in `advance`, as both do; `setWall` does not move it.
    public func makeWallTimer(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        ManualTimer(clock: self, queue: queue, handler: handler)
    }

    public func makeQuietDeadline(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) -> any ClockTimer {
        ManualTimer(clock: self, queue: queue, handler: handler)
    }

    /// Steps the wall clock only (the monotonic clock and the timers' deadlines stay).
    public func setWall(_ date: Date) { state.withLock { $0.wall = date } }

    /// How many timers are scheduled: a test's proof that something is waiting.
    public var scheduledCount: Int { state.withLock { $0.timers.values.filter { $0.timer != nil }.count } }

    /// The seconds until the next scheduled timer, if any.
    public var nextDeadlineIn: Double? {
        state.withLock { s in s.timers.values.filter { $0.timer != nil }.map { $0.due - s.monotonic }.min() }
    }

    /// Sleeps until `advance` passes `deadline` or the condition is signalled (the caller holds its lock).
    public func wait(on condition: NSCondition, untilMonotonic deadline: Double) -> Bool {
        let sleeper: Int? = state.withLock { s in
            guard s.monotonic < deadline else { return nil }
            s.lastSleeper += 1
            s.sleepers[s.lastSleeper] = (condition, deadline)
            return s.lastSleeper
        }
        guard let sleeper else { return false }
        condition.wait()
        return state.withLock { s in
            s.sleepers[sleeper] = nil
            return s.monotonic < deadline
        }
    }

    /// How many threads sleep on this clock: a test's proof that a source waits for it.
    public var sleepingCount: Int { state.withLock { $0.sleepers.count } }

    /// Wakes the sleepers whose deadline has come. Their conditions are taken outside the clock's lock: a sleeper
    /// holds its condition while it takes the clock's.
    private func wakeSleepers() {
        let due = state.withLock { s in s.sleepers.values.filter { $0.deadline <= s.monotonic }.map(\.condition) }
        for condition in due {
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Moves both clocks `seconds` forward, running every timer that comes due on the way at its own time and
    /// waking the threads whose sleep ends on the way.
    public func advance(by seconds: Double) {
        let end = state.withLock { $0.monotonic } + seconds
        while true {
            let next: (ManualTimer, Double)? = state.withLock { s in
                let due = s.timers.values.compactMap { e in e.timer.map { ($0, e.due) } }
                    .filter { $0.1 <= end }.min { $0.1 < $1.1 }
                if let (_, at) = due {
                    s.wall.addTimeInterval(max(0, at - s.monotonic))
                    s.monotonic = max(s.monotonic, at)
                }
                return due
            }
            guard let (timer, _) = next else { break }
            wakeSleepers()
            timer.fire()
        }
        state.withLock { s in
            s.wall.addTimeInterval(max(0, end - s.monotonic))
            s.monotonic = max(s.monotonic, end)
        }
        wakeSleepers()
    }

    fileprivate func set(_ timer: ManualTimer, due: Double?) {
        state.withLock { s in
            if let due { s.timers[ObjectIdentifier(timer)] = Entry(timer: timer, due: s.monotonic + due) }
            else { s.timers[ObjectIdentifier(timer)] = nil }
        }
    }

    fileprivate func rescheduleAfterFiring(_ timer: ManualTimer, repeating: Double?) {
        state.withLock { s in
            let id = ObjectIdentifier(timer)
            guard let entry = s.timers[id], entry.due <= s.monotonic else { return }  // moved by its handler
            if let repeating { s.timers[id]?.due = entry.due + max(repeating, 1e-6) } else { s.timers[id] = nil }
        }
    }
}

final class ManualTimer: ClockTimer {
    private let clock: ManualClock
    private let queue: DispatchQueue
    private let handler: @Sendable () -> Void
    private let settings = Locked<(repeating: Double?, cancelled: Bool)>((nil, false))

    init(clock: ManualClock, queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.queue = queue
        self.handler = handler
    }

    func schedule(after seconds: Double, repeating: Double?, leewaySeconds: Double) {
        guard settings.withLock({ s in
            s.repeating = repeating
            return !s.cancelled
        }) else { return }
        clock.set(self, due: max(0, seconds))
    }

    func clear() { clock.set(self, due: nil) }

    func cancel() {
        settings.withLock { $0.cancelled = true }
        clock.set(self, due: nil)
    }

    func fire() {
        let repeating = settings.withLock { $0.repeating }
        clock.rescheduleAfterFiring(self, repeating: repeating)
        queue.sync { handler() }
    }
}
