import Dispatch
import Foundation

/// Sends WATCHDOG=1 only while the daemon really works: each ping travels through the processing queue and
/// the socket server's event loop first, so a wedged pipeline or server stops the pings and systemd
/// restarts the service (WatchdogSec=). Also refreshes STATUS= every `statusEvery` pings.
///
/// `@unchecked Sendable`: `timer` and `lastStatus` are touched only on `queue` (start/stop hop there).
public final class Watchdog: @unchecked Sendable {
    private let notifier: Notifier
    private let interval: TimeInterval
    private let probe: (@escaping @Sendable () -> Void) -> Void
    private let statusText: () -> String
    private let queue = DispatchQueue(label: "stepd.watchdog")
    private var timer: DispatchSourceTimer?
    private var lastStatus = ""

    /// `probe` calls its argument once the daemon's queues have answered.
    public init(notifier: Notifier, interval: TimeInterval,
                probe: @escaping (@escaping @Sendable () -> Void) -> Void, statusText: @escaping () -> String) {
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
            if text != lastStatus {
                lastStatus = text
                notifier.status(text)
            }
        }
        queue.sync { self.timer = timer }
        timer.resume()
    }

    public func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }
}
