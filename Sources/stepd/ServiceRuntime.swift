import Foundation
import Logging
import StepProtocol
import StepService

/// The daemon's life as a system service: the history store the count continues from, the socket systemd
/// may pass, and the notify protocol (READY, STATUS, WATCHDOG, STOPPING).
final class ServiceRuntime {
    let settings: DaemonSettings
    let store: StepStore
    private let engine: Engine
    private let logger: Logger
    private let notifier = Notifier.fromEnvironment()
    private var watchdog: Watchdog?

    init(settings: DaemonSettings, engine: Engine, logger: Logger) {
        self.settings = settings
        self.engine = engine
        self.logger = logger
        var configuration = StepStore.Configuration(directory: settings.stateDirectory)
        configuration.retentionDays = settings.retentionDays
        store = StepStore(configuration: configuration)
    }

    /// Opens the store, continues the saved count, and has every step and reset recorded from now on.
    func openStore() {
        let fresh = StepStore.Counter(steps: 0, since: engine.snapshot.since)
        let counter = store.open(fresh: fresh)
        if counter != fresh {
            engine.restore(steps: counter.steps, since: counter.since)
            logger.info("continuing from \(counter.steps) steps since \(Timestamp.string(counter.since))")
        }
        let stride = engine.configuration.strideMeters
        engine.onEvent { [store] event in
            if case .step(let count, let time) = event {
                store.recordStep(count: count, at: time, distanceMeters: stride)
            }
        }
        engine.onReset { [store] since in store.recordReset(since: since) }
        store.startCommitting()
    }

    /// The socket systemd passed (socket activation), else nil: then the caller binds its own.
    func passedSocket() throws -> (descriptor: CInt, path: String?)? {
        let sockets = try SocketActivation.takeSockets()
        guard let first = sockets.first else { return nil }
        if sockets.count > 1 {
            logger.warning("systemd passed \(sockets.count) sockets; serving the first (\(first.name ?? "unnamed"))")
        }
        let path = try SocketActivation.unixListeningPath(of: first.descriptor)
        return (first.descriptor, path)
    }

    /// Tells systemd the daemon is ready (the socket accepts, the source runs) and starts the watchdog.
    func notifyReady(server: ProtocolServer) {
        guard let notifier else { return }
        notifier.ready(status: statusText())
        if let interval = Notifier.watchdogInterval() {
            let engine = self.engine
            let watchdog = Watchdog(notifier: notifier, interval: interval, probe: { done in
                engine.probe { server.probe(done) }
            }, statusText: { [weak self] in self?.statusText() ?? "" })
            watchdog.start()
            self.watchdog = watchdog
            logger.info("watchdog: pinging systemd every \(interval) s")
        }
    }

    /// The clean stop's service part, between stopping the source and closing the socket: commits the
    /// last steps so that SIGTERM loses none.
    func stop() {
        notifier?.stopping(status: "stopping: saving \(engine.snapshot.steps) steps")
        watchdog?.stop()
        engine.drain()
        if let saved = store.close() {
            print("stepd: stopped; \(saved.steps) steps since \(Timestamp.string(saved.since)) saved to \(store.configuration.path)")
        } else {
            print("stepd: stopped; the count (\(engine.snapshot.steps) steps) could not be saved: \(store.status.error ?? "store unavailable")")
        }
        fflush(stdout)
    }

    private func statusText() -> String {
        let s = engine.snapshot
        var text = "\(s.steps) steps since \(Timestamp.string(s.since)); source \(s.sourceState.name)"
        let st = store.status
        text += st.error.map { "; store failed: \($0)" } ?? "; store \(st.state)"
        return text
    }
}
