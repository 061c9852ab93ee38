import Dispatch
import Foundation
import Locking

/// Sends WATCHDOG=1 only while the daemon really works: each ping travels through the processing queue and
/// the socket server's event loop first, so a wedged pipeline or server stops the pings and systemd
/// restarts the service (WatchdogSec=). Also refreshes STATUS= whenever it changed since the last ping.
public final class Watchdog: Sendable {
    private let notifier: Notifier
    private let interval: TimeInterval
    private let probe: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let statusText: @Sendable () -> String
    private let queue = DispatchQueue(label: "stepd.watchdog")
    /// The timer (set by `start`, cancelled by `stop`) and the STATUS last sent (by the timer, on `queue`).
    private let state = Locked<(timer: DispatchSourceTimer?, lastStatus: String)>((nil, ""))

    /// `probe` calls its argument once the daemon's queues have answered.
    public init(notifier: Notifier, interval: TimeInterval,
                probe: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                statusText: @escaping @Sendable () -> String) {
        self.notifier = notifier
        self.interval = interval
        self.probe = probe
        self.statusText = statusText
    }

    public func start() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
        timer.setEventHandler { [self] in
            dispatchPrecondition(condition: .onQueue(queue))
            probe { [notifier] in notifier.watchdog() }
            let text = statusText()
            let changed = state.withLock { s -> Bool in
                defer { s.lastStatus = text }
                return text != s.lastStatus
            }
            if changed { notifier.status(text) }
        }
        state.withLock { $0.timer = timer }
        timer.resume()
    }

    /// Stops the pings; returns after a ping under way has gone out (on `queue`, as the timer's).
    public func stop() {
        queue.sync {
            state.withLock { s in
                s.timer?.cancel()
                s.timer = nil
            }
        }
    }
}
