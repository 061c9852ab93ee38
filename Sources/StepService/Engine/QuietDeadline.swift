import CNIOLinux
import Dispatch
import Glibc

/// A one-shot deadline on the monotonic clock that any thread sets, moves or clears with one system call and
/// no wake-up: a timerfd watched by a dispatch read source, whose handler runs on `queue` when it expires.
///
/// libdispatch keeps its timers on its manager thread (the timer thread of `scripts/bench-iio`): on Linux each
/// `schedule` of a DispatchSourceTimer, and each `asyncAfter`, wakes that thread to program its own timerfd,
/// and a timer that is due wakes it again. A deadline that moves with every batch (the walk's stall, the
/// store's oldest write) cost a wake-up per batch that way. Here the kernel keeps the expiry; nobody runs
/// until it is reached, and a deadline cleared or moved before it is reached costs nothing more.
///
/// The handler may run for a deadline moved or cleared just after it expired: it checks what it is for.
// unchecked: `fd` and `source` are set once; timerfd_settime is a system call, safe from any thread, and the
// source's cancel handler closes the descriptor only after the last handler has run.
final class QuietDeadline: @unchecked Sendable {
    private let fd: Int32
    private let source: DispatchSourceRead?
    /// Without a timerfd (none left to the process): a dispatch timer, which costs the wake-ups above.
    private let fallback: DispatchSourceTimer?

    init(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        self.fd = fd
        if fd >= 0 {
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler {
                var expirations: UInt64 = 0
                // Empty (EAGAIN) when the deadline was moved after it expired; the handler checks anyway.
                _ = Glibc.read(fd, &expirations, MemoryLayout<UInt64>.size)
                handler()
            }
            source.setCancelHandler { close(fd) }
            source.activate()
            self.source = source
            fallback = nil
        } else {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler(handler: handler)
            timer.activate()
            source = nil
            fallback = timer
        }
    }

    deinit { cancel() }

    /// Expires `seconds` from now (at once for zero or less), replacing any deadline set before.
    func set(after seconds: Double) {
        guard let source, !source.isCancelled else {
            fallback?.schedule(deadline: .now() + max(0, seconds))
            return
        }
        let nanoseconds = max(1, Int64((max(0, seconds) * 1e9).rounded(.up)))
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(nanoseconds / 1_000_000_000)
        spec.it_value.tv_nsec = Int(nanoseconds % 1_000_000_000)
        _ = timerfd_settime(fd, 0, &spec, nil)
    }

    /// No deadline until the next `set`.
    func clear() {
        guard let source, !source.isCancelled else {
            fallback?.schedule(deadline: .distantFuture)
            return
        }
        var spec = itimerspec()
        _ = timerfd_settime(fd, 0, &spec, nil)
    }

    /// For good: the descriptor is closed once a handler under way has returned.
    func cancel() {
        if let source, !source.isCancelled {
            clear()
            source.cancel()
        }
        fallback?.cancel()
    }
}
