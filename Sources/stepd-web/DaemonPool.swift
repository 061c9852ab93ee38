import Dispatch
import Locking
import Timekeeping

/// The daemon connections stepd-web's requests may hold at once (docs/web.md, "Limits"). However many HTTP clients
/// ask, the daemon sees at most `connections` of stepd-web's requests, so stepd-web never takes the slots its
/// users need (issue 39, point 2); a request waits for a free one in order, at most `waitSeconds`, behind at most
/// `waiting` others; beyond either it is answered 503 with Retry-After. The event stream's one `watch` connection
/// is not counted here: it is always there while a page is open.
final class DaemonPool: Sendable {
    let connections: Int
    let waiting: Int
    let waitSeconds: Int64
    /// The bound on a wait for a place.
    private let clock: any DaemonClock
    /// What its connections are, for the 503's words.
    let what: String

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var inUse = 0
        var queue: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    init(connections: Int = WebLimits.daemonConnections, waiting: Int = WebLimits.daemonWaiting,
         waitSeconds: Int64 = WebLimits.daemonWaitSeconds, what: String = "connections to stepd",
         clock: any DaemonClock = SystemClock()) {
        self.what = what
        self.clock = clock
        self.connections = connections
        self.waiting = waiting
        self.waitSeconds = waitSeconds
    }

    /// Takes a connection's place, waiting for one if all are held; `release` gives it back. Throws
    /// `DaemonError.busy` when the queue is full or the wait too long, CancellationError when the task is cancelled.
    func acquire() async throws {
        enum Decision { case granted, refused, queued(UInt64) }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let decision = state.withLock { state -> Decision in
                    if state.inUse < connections, state.queue.isEmpty {
                        state.inUse += 1
                        return .granted
                    }
                    guard state.queue.count < waiting else { return .refused }
                    state.queue.append(Waiter(id: id, continuation: continuation))
                    return .queued(id)
                }
                switch decision {
                case .granted: continuation.resume()
                case .refused: continuation.resume(throwing: DaemonError.busy(reason: busyReason(queueFull: true)))
                case .queued(let id):
                    clock.run(after: Double(waitSeconds), on: .global()) { [self] in
                        remove(id)?.resume(throwing: DaemonError.busy(reason: busyReason(queueFull: false)))
                    }
                }
            }
        } onCancel: {
            remove(id)?.resume(throwing: CancellationError())
        }
    }

    /// Gives a place back: to the first request waiting, else to the pool.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if !state.queue.isEmpty { return state.queue.removeFirst().continuation }
            state.inUse = max(0, state.inUse - 1)
            return nil
        }
        next?.resume()
    }

    /// Requests holding a connection and requests waiting for one, now.
    var usage: (inUse: Int, waiting: Int) { state.withLock { ($0.inUse, $0.queue.count) } }

    private func remove(_ id: UInt64) -> CheckedContinuation<Void, any Error>? {
        state.withLock { state in
            guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return nil }
            return state.queue.remove(at: index).continuation
        }
    }

    private func busyReason(queueFull: Bool) -> String {
        queueFull
            ? "stepd-web is busy: its \(connections) \(what) are in use and \(waiting) requests wait for one"
            : "stepd-web is busy: none of its \(connections) \(what) came free within \(waitSeconds) s"
    }
}
