import Foundation
import Locking

/// Sends WATCHDOG=1 only while the daemon really works: each ping is a tick of the socket server's event loop
/// (`ticker`) that travels through the processing queue (`probe`) before it goes out, so a wedged server or
/// pipeline stops the pings and systemd restarts the service (WatchdogSec=). Also refreshes STATUS= whenever it
/// changed since the last ping.
///
/// Two wake-ups a ping: the event loop for its tick, and a worker for the processing queue, which sends it.
/// A timer of its own would cost four (libdispatch's timer thread, the watchdog's queue, then the processing
/// queue and the event loop), 0.27 a second at the unit's 15 s, more than half a still wearer's budget (docs/iio.md).
public final class Watchdog: Sendable {
    /// Calls `tick` every `interval` seconds until the returned closure is called.
    public typealias Ticker = @Sendable (_ interval: TimeInterval, _ tick: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)

    private let notifier: Notifier
    private let interval: TimeInterval
    private let ticker: Ticker
    private let probe: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let statusText: @Sendable () -> String
    /// What stops the ticks (set by `start`, called by `stop`), and the STATUS last sent.
    private let state = Locked<(cancel: (@Sendable () -> Void)?, lastStatus: String, stopped: Bool)>((nil, "", false))

    /// `probe` calls its argument once the processing queue has answered.
    public init(notifier: Notifier, interval: TimeInterval, ticker: @escaping Ticker,
                probe: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                statusText: @escaping @Sendable () -> String) {
        self.notifier = notifier
        self.interval = interval
        self.ticker = ticker
        self.probe = probe
        self.statusText = statusText
    }

    public func start() {
        let cancel = ticker(interval) { [self] in
            probe { [self] in
                let text = statusText()
                // Sent under the lock, so that `stop` never returns with a ping still to go out.
                state.withLock { s in
                    guard !s.stopped else { return }
                    notifier.watchdog()
                    if text != s.lastStatus { notifier.status(text) }
                    s.lastStatus = text
                }
            }
        }
        state.withLock { $0.cancel = cancel }
    }

    /// Stops the pings: none goes out after this returns.
    public func stop() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            s.stopped = true
            defer { s.cancel = nil }
            return s.cancel
        }
        cancel?()
    }
}
