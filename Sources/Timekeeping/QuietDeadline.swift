import CTimerFD
import Dispatch
import Glibc
import Locking

/// A one-shot deadline on the monotonic clock that any thread sets, moves or clears with one system call and
/// no wake-up: a timerfd watched by a dispatch read source, whose handler runs on `queue` when it expires.
///
/// libdispatch keeps its timers on its manager thread (the timer thread of `scripts/bench-iio`): on Linux each
/// `schedule` of a DispatchSourceTimer, and each `asyncAfter`, wakes that thread to program its own timerfd,
/// and a timer that is due wakes it again. A deadline that moves with every batch (the walk's stall, the
/// store's oldest write) would cost a wake-up per batch that way. Here the kernel keeps the expiry; nobody runs
/// until it is reached, and a deadline cleared or moved before it is reached costs nothing more.
///
/// The descriptor is behind a lock that `cancel` and the source's close take too: a `set` racing a `cancel` on
/// another thread finds the descriptor closed (-1) and does nothing, rather than setting a number that the
/// process may already have reused for another file.
// unchecked: `source` and `fallback` are set once; a dispatch source's calls are safe from any thread, and the
// descriptor is reached only under its lock.
final class QuietDeadline: ClockTimer, @unchecked Sendable {
    /// The timerfd, or -1 once closed (or when none could be made).
    private let fd: Locked<Int32>
    private let source: DispatchSourceRead?
    /// Without a timerfd (none left to the process): a dispatch timer, which costs the wake-ups above.
    private let fallback: DispatchClockTimer?

    init(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        let descriptor = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        let fd = Locked(descriptor)
        self.fd = fd
        guard descriptor >= 0 else {
            source = nil
            fallback = DispatchClockTimer(queue: queue, handler: handler)
            return
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            var expirations: UInt64 = 0
            // Empty (EAGAIN) when the deadline was moved after it expired; the handler checks anyway.
            _ = Glibc.read(descriptor, &expirations, MemoryLayout<UInt64>.size)
            handler()
        }
        // Dispatch calls this once the last event handler has returned: the descriptor is no longer watched.
        source.setCancelHandler {
            fd.withLock { open in
                if open >= 0 { close(open) }
                open = -1
            }
        }
        source.activate()
        self.source = source
        fallback = nil
    }

    deinit { cancel() }

    /// Expires `seconds` from now (at once for zero or less), replacing any deadline set before. A quiet deadline
    /// is one-shot and exact: `repeating` and `leewaySeconds` are for dispatch timers.
    func schedule(after seconds: Double, repeating: Double?, leewaySeconds: Double) {
        precondition(repeating == nil, "a quiet deadline does not repeat")
        if let fallback { return fallback.schedule(after: seconds, repeating: nil, leewaySeconds: 0) }
        let nanoseconds = max(1, Int64((max(0, seconds) * 1e9).rounded(.up)))
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(nanoseconds / 1_000_000_000)
        spec.it_value.tv_nsec = Int(nanoseconds % 1_000_000_000)
        settime(spec)
    }

    /// No deadline until the next `schedule`.
    func clear() {
        if let fallback { return fallback.clear() }
        settime(itimerspec())
    }

    private func settime(_ spec: itimerspec) {
        var spec = spec
        fd.withLock { open in
            if open >= 0 { _ = timerfd_settime(open, 0, &spec, nil) }
        }
    }

    /// For good: the descriptor is closed once a handler under way has returned.
    func cancel() {
        if let fallback { return fallback.cancel() }
        guard let source, !source.isCancelled else { return }
        clear()
        source.cancel()
    }
}
