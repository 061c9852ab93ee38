import Dispatch
import Foundation
import Locking
import Logging
import Timekeeping

/// The one owner of the daemon's start and stop. The parts (the store, the engine, the sources, the server,
/// MQTT, systemd's watchdog) start in the order given, which is their dependency order, and stop in reverse.
/// The contract is swift-service-lifecycle's ServiceGroup's, kept synchronous: the daemon runs on dispatch
/// queues and threads, not Swift concurrency, and a task runtime would cost its memory budget for nothing.
///
/// - A part that fails to start: the parts started before it stop, in reverse; the ones after it never start;
///   `start` throws the part's error.
/// - A stop asked for during start (`stop` from another thread): the part starting finishes, no other starts,
///   everything started stops in reverse, and `start` throws `Interruption.stopRequested`; `stop` returns once
///   that is done.
/// - Each part's stop has a time budget: a part that has not stopped by then is cut off (logged, its stop left
///   running on its own thread) and the next one stops all the same.
public final class Lifecycle: Sendable {
    /// One part: how it starts (on the thread that calls `Lifecycle.start`) and how it stops (on a thread of
    /// its own, within `stopBudgetSeconds`).
    public struct Part {
        public let name: String
        public let stopBudgetSeconds: Double
        let start: () throws -> Void
        let stop: @Sendable () -> Void

        /// `start` and `stop` are called once each at most, `stop` only when `start` returned.
        public init(_ name: String, stopBudgetSeconds: Double = Lifecycle.defaultStopBudgetSeconds,
                    start: @escaping () throws -> Void = {}, stop: @escaping @Sendable () -> Void = {}) {
            self.name = name
            self.stopBudgetSeconds = stopBudgetSeconds
            self.start = start
            self.stop = stop
        }

        var stopping: Stopping { Stopping(name: name, budgetSeconds: stopBudgetSeconds, stop: stop) }
    }

    /// What is kept of a part once it has started.
    struct Stopping: Sendable {
        let name: String
        let budgetSeconds: Double
        let stop: @Sendable () -> Void
    }

    public enum Interruption: Error, CustomStringConvertible {
        case stopRequested
        public var description: String { "a stop was asked for while starting" }
    }

    /// A source's stop waits up to 3 s for its thread (SourceThread); stepd.service's TimeoutStopSec=10 is for
    /// all the parts together, so the part that must not be cut short (the store) is given more than the rest.
    public static let defaultStopBudgetSeconds = 4.0

    private enum Phase { case idle, starting, running, stopping, stopped }
    private struct State {
        var phase = Phase.idle
        var started: [Stopping] = []
        var stopRequested = false
    }
    private let state = Locked(State())
    /// Left once the parts started have stopped (or nothing will start): what `stop` waits for.
    private let finished = DispatchGroup()
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
        finished.enter()
    }

    /// The names of the parts running now, in start order.
    public var running: [String] { state.withLock { $0.started.map(\.name) } }

    /// Starts `parts` in order; see the type's contract for a failure and for a stop meanwhile. Once only.
    public func start(_ parts: [Part]) throws {
        let fresh = state.withLock { s -> Bool in
            guard s.phase == .idle else { return false }
            s.phase = .starting
            return true
        }
        guard fresh else { throw Interruption.stopRequested }
        for part in parts {
            if state.withLock({ $0.stopRequested }) { return try abandonStart() }
            logger.debug("starting \(part.name)")
            do {
                try part.start()
            } catch {
                logger.debug("\(part.name) could not start (\(error)): stopping what had started")
                stopStarted()
                throw error
            }
            state.withLock { $0.started.append(part.stopping) }
        }
        let abandon = state.withLock { s -> Bool in
            if !s.stopRequested { s.phase = .running }
            return s.stopRequested
        }
        if abandon { try abandonStart() }
    }

    private func abandonStart() throws {
        logger.notice("stop asked for while starting: stopping what had started")
        stopStarted()
        throw Interruption.stopRequested
    }

    /// Stops every part started, in reverse order, each within its budget, and returns once they are stopped
    /// or cut off. From any thread, any number of times; during `start` it waits for `start` to give up.
    public func stop() {
        enum Action { case none, stop, wait }
        let action = state.withLock { s -> Action in
            switch s.phase {
            case .idle:
                s.phase = .stopped
                return .none
            case .starting:
                s.stopRequested = true
                return .wait
            case .running:
                s.phase = .stopping
                return .stop
            case .stopping, .stopped:
                return .wait
            }
        }
        switch action {
        case .none: finished.leave()
        case .stop: stopStarted()
        case .wait: finished.wait()
        }
    }

    private func stopStarted() {
        let parts = state.withLock { s -> [Stopping] in
            s.phase = .stopping
            return s.started.reversed()
        }
        for part in parts { stop(part) }
        state.withLock { s in
            s.started = []
            s.phase = .stopped
        }
        finished.leave()
    }

    /// Runs the part's stop on a thread of its own and waits for it at most its budget.
    private func stop(_ part: Stopping) {
        logger.debug("stopping \(part.name)")
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global(qos: .userInitiated).async {
            part.stop()
            done.signal()
        }
        if done.wait(timeout: SystemClock.dispatchDeadline(after: part.budgetSeconds)) == .timedOut {
            logger.error("\(part.name) did not stop within \(part.budgetSeconds) s: cut off, the other parts stop")
        }
    }
}
