import Foundation
import Logging
import NIOConcurrencyHelpers
import StepProtocol
import StepService

/// The daemon's life as a system service: the history store the count continues from, the socket systemd
/// may pass, and the notify protocol (READY, STATUS, WATCHDOG, STOPPING).
final class ServiceRuntime {
    let store: StepStore
    private let engine: Engine
    private let logger: Logger
    private let notifier = Notifier.fromEnvironment()
    private var watchdog: Watchdog?
    /// Held for the life of the process: one daemon per state directory.
    private var lock: StateDirectoryLock?

    init(options: ServiceOptions, engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
        var configuration = StepStore.Configuration(directory: options.stateDirectory)
        configuration.retentionDays = options.retentionDays
        store = StepStore(configuration: configuration)
    }

    /// Opens the store, continues the saved count, path and visits, and has every step, floor, reset, track
    /// point and visit recorded from now on.
    func openStore() {
        lockStateDirectory()
        let fresh = StepStore.Counter(steps: 0, since: engine.snapshot.since)
        // A store away at start comes back with the count it saved: STEPS goes on from the sum.
        store.onSavedCounter = { [store, engine] saved in
            engine.add(savedSteps: saved.steps, since: saved.since) { steps, since in
                store.recordCounter(StepStore.Counter(steps: steps, since: since))
            }
        }
        store.onReopened = { [weak self] in self?.relockIfLost() }
        let counter = store.open(fresh: fresh)
        if counter != fresh {
            engine.restore(steps: counter.steps, since: counter.since)
            logger.notice("continuing from \(counter.steps) steps since \(Timestamp.string(counter.since))")
        }
        restoreLocation()
        engine.onLocationRecord { [store] record in
            switch record {
            case .trackPoint(let point): store.record(StoredTrackPoint(point))
            case .visit(let visit): store.record(StoredVisit(visit))
            }
        }
        // Floors come as running totals in PEDOMETER snapshots; the store wants what each minute added.
        let floorsRecorded = NIOLockedValueBox(0)
        engine.onEvent { [store, engine] event in
            switch event {
            case .step(let count, let time):
                store.recordStep(count: count, at: time, distanceMeters: engine.snapshot.strideMeters)
            case .activity(.stationary, _):
                // The walk's last steps are not followed by another that would carry them to the disk.
                store.flush()
            case .pedometer(let snapshot):
                guard let ascended = snapshot.floorsAscended else { break }
                let added = floorsRecorded.withLockedValue { recorded -> Int in
                    defer { recorded = max(recorded, ascended) }
                    return ascended - recorded
                }
                if added > 0 { store.recordFloors(added, at: snapshot.end) }
            default:
                break
            }
        }
        engine.onReset { [store] since in
            floorsRecorded.withLockedValue { $0 = 0 }
            store.recordReset(since: since)
        }
        store.startCommitting()
    }

    /// Exits 75 when another daemon holds the state directory: two would each think they own the counter.
    private func lockStateDirectory() {
        let directory = store.configuration.directory
        do {
            lock = try StateDirectoryLock.acquire(directory: directory)
            if lock == nil {
                logger.warning("cannot create \(directory)/\(StateDirectoryLock.fileName): running without the one-daemon lock")
            }
        } catch let failure as StateDirectoryLock.Failure {
            FileHandle.standardError.write(Data("stepd: \(failure)\n".utf8))
            if case .held = failure { exit(ExitStatus.tempFail.rawValue) }
            exit(ExitStatus.cantCreate.rawValue)
        } catch {
            FileHandle.standardError.write(Data("stepd: cannot lock \(directory): \(error)\n".utf8))
            exit(ExitStatus.cantCreate.rawValue)
        }
    }

    /// After the store recovers from a fault: a state directory removed and created again took the lock file
    /// with it, so the lock is taken again on the new one. Runs on the store's queue.
    private func relockIfLost() {
        if let lock, lock.isCurrent { return }
        do {
            lock = try StateDirectoryLock.acquire(directory: store.configuration.directory)
        } catch {
            logger.error("\(error) (it was started while the state directory was gone)")
        }
    }

    /// The path (its last day at 1 Hz) and the visits saved by earlier runs. A stay that was still going on
    /// when the daemon stopped ends at the last point saved within it: this run cannot know it went on.
    private func restoreLocation() {
        let limits = engine.configuration.location
        guard let stored = try? store.latestTrackPoints(limit: limits.track.maximumPoints),
              var visits = try? store.latestVisits(limit: limits.visits.maximumVisits) else { return }
        if let open = visits.indices.last, visits[open].departure == nil {
            let last = stored.last { $0.time >= visits[open].arrival }?.time ?? visits[open].arrival
            visits[open].departure = last
            store.record(visits[open])
        }
        engine.restoreLocation(points: stored.map(\.fix), visits: visits.map(\.visit))
        if !stored.isEmpty || !visits.isEmpty {
            logger.info("continuing the track from \(stored.count) saved points and \(visits.count) visits")
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
            let watchdog = Watchdog(notifier: notifier, interval: interval, probe: { done in
                engine.probe { server.probe(done) }
            }, statusText: { [weak self] in self?.statusText() ?? "" })
            watchdog.start()
            self.watchdog = watchdog
            logger.debug("watchdog: pinging systemd every \(interval) s")
        }
    }

    /// The clean stop's service part, after the source has stopped and before the socket closes: commits
    /// the last steps so that SIGTERM loses none.
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
