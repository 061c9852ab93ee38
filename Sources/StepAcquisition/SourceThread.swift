import Foundation

/// A source's own thread and how it stops, the same for every source (IIO accelerometer and barometer, gpsd,
/// replay): the thread polls `isStopped` or sleeps in `wait`, which a stop cuts short; a blocking read installs
/// a way to unblock it (libiio's iio_buffer_cancel) with `whileBlocking`. `stop()` returns once the thread has
/// ended, so that no last batch reaches the engine (and through it the store) after the source was stopped.
///
/// `@unchecked Sendable`: every mutable field is read and written under `condition`'s lock.
public final class SourceThread: @unchecked Sendable {
    /// How long `stop()` waits for the thread: longer than any one read of a source (a gpsd wait is 0.5 s, a
    /// libiio refill is cancelled), short enough that a wedged driver cannot hold SIGTERM back.
    public static let stopTimeoutSeconds = 3.0

    private let name: String
    private let condition = NSCondition()
    private var stopped = false
    private var running = false
    private var cancelHook: (() -> Void)?

    public init(name: String) {
        self.name = name
    }

    /// Runs `body` on a new thread named `name`; `body` returns when `isStopped` or when it has nothing more.
    public func start(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        running = true
        condition.unlock()
        let thread = Thread { [self] in
            body()
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
    }

    public var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Asks the thread to stop, unblocks its read, and waits until it has ended (at most `stopTimeoutSeconds`).
    /// Returns false when the thread was still running then.
    @discardableResult
    public func stop() -> Bool {
        // The hook runs under the lock so it can never outlive the buffer it cancels (see whileBlocking).
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        cancelHook?()
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: Self.stopTimeoutSeconds)
        while running {
            if !condition.wait(until: deadline) { break }
        }
        return !running
    }

    /// Sleeps up to `seconds`; true if stopped.
    public func wait(seconds: Double) -> Bool {
        wait(until: Date(timeIntervalSinceNow: seconds))
    }

    public func wait(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            if !condition.wait(until: deadline) { break }
        }
        return stopped
    }

    /// Runs `body` with `cancel` installed as the way to unblock it.
    public func whileBlocking<T>(cancel: @escaping () -> Void, _ body: () throws -> T) rethrows -> T {
        condition.lock()
        cancelHook = cancel
        let already = stopped
        condition.unlock()
        if already { cancel() }
        defer {
            condition.lock()
            cancelHook = nil
            condition.unlock()
        }
        return try body()
    }
}
