import Locking

/// A test's shared value, read whole (the threads of a test: clients started on other queues, a process's pipes
/// read in the background).
extension Locked where Value: Sendable {
    var value: Value { withLock { $0 } }
}
