import Synchronization

/// A value shared by the threads of a test (clients started on other queues, a process's pipes read in the
/// background), behind a Mutex: Sendable by construction.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    var value: Value { withLock { $0 } }
}
