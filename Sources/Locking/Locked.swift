#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share, behind a lock: the one way stepd's types hold state that more than one thread
/// touches, so that they are `Sendable` by construction.
///
/// The same contract as the standard library's `Synchronization.Mutex` (a value handed in with `sending`, reached
/// only inside `withLock`, so even a non-Sendable value cannot escape to another thread unlocked), but over a
/// pthread mutex: ThreadSanitizer follows pthread locks, while `Mutex` on Linux waits on a bare futex that it
/// cannot see, so every access under a `Mutex` is reported as a race and `make test-tsan` cannot tell a real
/// one from it (docs/testing.md).
// unchecked: every access to `value` is inside `withLock`, under `mutex`; `sending` keeps it from escaping unlocked.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        value = initialValue
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. Not reentrant: `body` must not take the same lock again.
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
