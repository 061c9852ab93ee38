import Foundation

/// How a source's thread learns it must stop: a flag, a wait that a stop cuts short, and a hook to
/// unblock a blocking read (libiio's iio_buffer_cancel) from the stopping thread.
final class IIOStopSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false
    private var cancelHook: (() -> Void)?

    var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    func stop() {
        // The hook runs under the lock so it can never outlive the buffer it cancels (see whileBlocking).
        condition.lock()
        stopped = true
        cancelHook?()
        condition.broadcast()
        condition.unlock()
    }

    /// Sleeps up to `seconds`; true if stopped.
    func wait(seconds: Double) -> Bool {
        wait(until: Date(timeIntervalSinceNow: seconds))
    }

    func wait(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            if !condition.wait(until: deadline) { break }
        }
        return stopped
    }

    /// Runs `body` with `cancel` installed as the way to unblock it.
    func whileBlocking<T>(cancel: @escaping () -> Void, _ body: () throws -> T) rethrows -> T {
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
