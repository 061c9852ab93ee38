import Foundation
import Locking
import Logging
import StepEngine
import StepProtocol
import StepServer
import StepService
import StepStore

/// The daemon's life as a system service: the history store the count continues from, the socket systemd
/// may pass, and the notify protocol (READY, STATUS, WATCHDOG, STOPPING).
final class ServiceRuntime: Sendable {
    let store: StepStore
    private let engine: Engine
    private let logger: Logger
    private let notifier = Notifier.fromEnvironment()
    private let watchdog = Locked<Watchdog?>(nil)
    /// Held for the life of the process: one daemon per state directory. Set at start, and again by the
    /// store's queue after a fault (`relockIfLost`).
    private let lock = Locked<StateDirectoryLock?>(nil)
    /// The store's observer of the engine, registered while the store is open.
    private let recorder = Locked<StoreRecorder?>(nil)

    init(options: ServiceOptions, engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
        var configuration = StepStore.Configuration(directory: options.stateDirectory,
                                                    stepHoldBackSeconds: engine.stepHoldBackSeconds)
        configuration.retentionDays = options.retentionDays
        store = StepStore(configuration: configuration)
    }

    /// Takes the state directory, then opens the store and has the engine's counting recorded in it
    /// (StepService's EngineRecording).
    func openStore() throws {
        try lockStateDirectory()
        store.onReopened = { [weak self] in self?.relockIfLost() }
        let recorder = EngineRecording.start(engine: engine, store: store, logger: logger)
        self.recorder.withLock { $0 = recorder }
    }

    /// Fails with 75 when another daemon holds the state directory: two would each think they own the counter.
    private func lockStateDirectory() throws {
        let directory = store.configuration.directory
        do {
            let held = try lock.withLock { lock in
                lock = try StateDirectoryLock.acquire(directory: directory)
                return lock != nil
            }
            if !held {
                logger.warning("cannot create \(directory)/\(StateDirectoryLock.fileName): running without the one-daemon lock")
            }
        } catch let failure as StateDirectoryLock.Failure {
            if case .held = failure { throw StartFailure(description: "\(failure)", status: .tempFail) }
            throw StartFailure(description: "\(failure)", status: .cantCreate)
        } catch {
            throw StartFailure(description: "cannot lock \(directory): \(error)", status: .cantCreate)
        }
    }

    /// After the store recovers from a fault: a state directory removed and created again took the lock file
    /// with it, so the lock is taken again on the new one. Runs on the store's queue.
    private func relockIfLost() {
        let directory = store.configuration.directory
        lock.withLock { lock in
            if let current = lock, current.isCurrent { return }
            do {
                // The path's claim stays with the lock held since the start: no other daemon took the
                // directory meanwhile.
                lock = try lock.map { try $0.relock(directory: directory) ?? $0 } ?? StateDirectoryLock.acquire(directory: directory)
            } catch {
                logger.error("\(error) (it was started while the state directory was gone)")
            }
        }
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
            let watchdog = Watchdog(notifier: notifier, interval: interval, ticker: { interval, tick in
                let task = server.repeatOnLoop(every: interval, tick)
                return { task.cancel() }
            }, probe: { done in
                engine.probe(done)
            }, statusText: { [weak self] in self?.statusText() ?? "" })
            watchdog.start()
            self.watchdog.withLock { $0 = watchdog }
            logger.debug("watchdog: pinging systemd every \(interval) s")
        }
    }

    /// The first thing a clean stop does: tells systemd, and stops the watchdog's pings.
    func notifyStopping() {
        notifier?.stopping(status: "stopping: saving \(engine.snapshot.steps) steps")
        watchdog.withLock { $0 }?.stop()
    }

    /// The last thing a clean stop does, once the sources, the server and the engine's queue have stopped:
    /// commits the last steps so that SIGTERM loses none.
    /// `announce`: false when the daemon never served (a failed start), whose reason is the line to read.
    func closeStore(announce: Bool = true) {
        if let recorder = recorder.withLock({ $0 }) { engine.unregister(recorder) }
        let saved = store.close()
        guard announce else { return }
        if let saved {
            print("stepd: stopped; \(saved.steps) steps since \(Timestamp.string(saved.since)) saved to \(store.configuration.path)")
        } else {
            print("stepd: stopped; the count (\(engine.snapshot.steps) steps) could not be saved: \(store.status.error ?? "store unavailable")")
        }
        fflush(nil)
    }

    /// The state in one line: systemd's STATUS, and what SIGUSR1 logs.
    func statusText() -> String {
        let s = engine.snapshot
        var text = "\(s.steps) steps since \(Timestamp.string(s.since)); source \(s.sourceState.name)"
        let st = store.status
        text += st.error.map { "; store failed: \($0)" } ?? "; store \(st.state)"
        return text
    }
}
