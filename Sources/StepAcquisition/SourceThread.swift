import Foundation
import Locking
import Logging
import Timekeeping

/// A source's own thread and how it stops, the same for every source (IIO accelerometer and barometer, gpsd,
/// replay): the thread polls `isStopped` or sleeps in `wait`, which a stop cuts short; a blocking read installs
/// a way to unblock it (libiio's iio_buffer_cancel) with `whileBlocking`. `stop()` waits until the thread has
/// ended, so that no last batch reaches the engine (and through it the store) after the source was stopped,
/// but at most `stopTimeoutSeconds`: it returns false when the thread was still running then, and every source
/// logs that (a wedged driver), so a stop that did not wait is never silent.
///
/// Sendable by construction: the state is in a `Locked` value. `wakeUps` only orders sleeps and wake-ups: a sleeper
/// looks at the state and sleeps under its lock, and whoever changes the state broadcasts under it, so no
/// wake-up falls between the look and the sleep.
public final class SourceThread: Sendable {
    /// How long `stop()` waits for the thread: longer than any one read of a source (a gpsd wait ends when its socket is shut down, a
    /// libiio refill is cancelled), short enough that a wedged driver cannot hold SIGTERM back.
    public static let stopTimeoutSeconds = 3.0

    private struct State {
        var stopped = false
        var running = false
        /// How to unblock the read the thread is in (whileBlocking); run under the lock, see there.
        var cancelHook: (@Sendable () -> Void)?
    }

    private let name: String
    /// What the thread's sleeps between reads are measured on (a test's manual clock, or the system's).
    public let clock: any DaemonClock
    private let state = Locked(State())
    private let wakeUps = NSCondition()

    public init(name: String, clock: any DaemonClock = SystemClock()) {
        self.name = name
        self.clock = clock
    }

    /// Runs `body` on a new thread named `name`; `body` returns when `isStopped` or when it has nothing more.
    public func start(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.running = true }
        let thread = Thread { [self] in
            ThreadName.setForCurrentThread(name)
            body()
            wakeUps.lock()
            state.withLock { $0.running = false }
            wakeUps.broadcast()
            wakeUps.unlock()
        }
        thread.name = name
        thread.start()
    }

    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Asks the thread to stop, unblocks its read, and waits until it has ended, at most `timeoutSeconds`.
    /// Returns false when the thread was still running then: the caller says so (a driver that does not let go).
    public func stop(timeoutSeconds: Double = stopTimeoutSeconds) -> Bool {
        wakeUps.lock()
        defer { wakeUps.unlock() }
        // The hook runs under the state's lock so it can never outlive the buffer it cancels (see whileBlocking).
        state.withLock {
            $0.stopped = true
            $0.cancelHook?()
        }
        wakeUps.broadcast()
        // Real time, whatever the thread's clock: the bound on a real thread's exit, which no manual clock moves.
        let deadline = SystemClock().now.addingTimeInterval(timeoutSeconds)
        while state.withLock({ $0.running }) {
            if !wakeUps.wait(until: deadline) { break }
        }
        return !state.withLock { $0.running }
    }

    /// `stop()` for a source: a thread that did not end within the time-out is a warning naming `what`, and the
    /// daemon goes on (a read that never returns must not hold SIGTERM back).
    public func stop(logger: Logger, _ what: String, timeoutSeconds: Double = stopTimeoutSeconds) {
        if !stop(timeoutSeconds: timeoutSeconds) {
            logger.warning("\(what): the thread did not stop within \(Self.seconds(timeoutSeconds)) s (a read that does not return); going on without it")
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// Sleeps up to `seconds` of the thread's clock; true if stopped.
    public func wait(seconds: Double) -> Bool {
        wait(seconds: seconds, or: { false })
    }

    /// Sleeps up to `seconds` of the thread's clock (`.infinity`: no time-out, no timer at all), or until `done`
    /// says true after a `wake()` (checked under the wake-up lock, so that a `wake()` after a change `done` looks
    /// at is never missed); true if stopped. `done` must not call `wake()`, and `wake()` must be called outside
    /// any lock `done` takes.
    public func wait(seconds: Double, or done: () -> Bool) -> Bool {
        wait(untilMonotonic: seconds.isFinite ? clock.monotonicSeconds + seconds : .infinity, or: done)
    }

    /// Sleeps until the thread's clock's monotonic time reaches `deadline`, as `wait(seconds:or:)`.
    public func wait(untilMonotonic deadline: Double, or done: () -> Bool = { false }) -> Bool {
        wakeUps.lock()
        defer { wakeUps.unlock() }
        while !isStopped, !done() {
            if deadline == .infinity {
                wakeUps.wait()
            } else if !clock.wait(on: wakeUps, untilMonotonic: deadline) {
                break
            }
        }
        return isStopped
    }

    /// Wakes a `wait(seconds:or:)` without stopping the thread: what its `done` looks at has changed.
    public func wake() {
        wakeUps.lock()
        wakeUps.broadcast()
        wakeUps.unlock()
    }

    /// Runs `body` with `cancel` installed as the way to unblock it. `cancel` runs on the thread calling
    /// `stop()`, under the state's lock: `body` cannot return (and free what `cancel` touches) meanwhile.
    public func whileBlocking<T>(cancel: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        let already = state.withLock {
            $0.cancelHook = cancel
            return $0.stopped
        }
        if already { cancel() }
        defer { state.withLock { $0.cancelHook = nil } }
        return try body()
    }
}
