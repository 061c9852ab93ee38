import Foundation
import Logging
import StepEngine
import StepProcessing
import StepProtocol
import StepStore

/// The engine and the store joined: a start continues the count (steps and floors), the path and the visits the store saved,
/// and from then on every step, floor, reset, track point and visit the engine reports is recorded. The
/// daemon calls `start` once, after it has taken the state directory's lock and before the sources start; it
/// registers the store's `StoreRecorder` with the engine, which the daemon unregisters before the store closes.
public enum EngineRecording {
    @discardableResult
    public static func start(engine: Engine, store: StepStore, logger: Logger) -> StoreRecorder {
        let fresh = StepStore.Counter(steps: 0, since: engine.snapshot.since)
        // A store away at start comes back with the count it saved: STEPS goes on from the sum, handed back
        // through the processing queue so that it reaches the store in order with the steps.
        store.onSavedCounter = { [store, engine] saved in
            engine.add(saved: (saved.steps, saved.since, saved.distanceMeters, saved.floors)) { steps, since, distance, floors in
                store.record(.counter(StepStore.Counter(steps: steps, since: since, distanceMeters: distance, floors: floors)))
            }
        }
        let counter = store.open(fresh: fresh)
        if counter != fresh {
            engine.restore(steps: counter.steps, since: counter.since, distanceMeters: counter.distanceMeters, floors: counter.floors)
            let floors = counter.floors.map { ", \($0.ascended) floors up and \($0.descended) down" } ?? ""
            logger.notice("continuing from \(counter.steps) steps\(floors) since \(Timestamp.string(counter.since))")
        }
        restoreToday(engine: engine, store: store, counter: counter, logger: logger)
        restoreLocation(engine: engine, store: store, logger: logger)
        let recorder = StoreRecorder(store: store)
        engine.register(recorder)
        store.startCommitting()
        return recorder
    }

    /// Today's figures from the minute bins saved since local midnight (the history `history` sums), so that
    /// a restart, or a start in another zone, shows the day as the history has it. The history keeps the floors
    /// up only: the floors down come from the counter when its reset was made today, else from this start.
    private static func restoreToday(engine: Engine, store: StepStore, counter: StepStore.Counter, logger: Logger) {
        let now = engine.clock.now
        let day = DayCounter.day(holding: now, zone: Engine.daemonZone)
        guard day.start < now, let bins = try? store.history(from: day.start, to: now, size: .minute) else { return }
        let minutes = bins.map {
            DayCounter.SavedMinute(start: $0.start, steps: $0.steps, distanceMeters: $0.distanceMeters, floorsAscended: $0.floors)
        }
        let descended = counter.since >= day.start ? counter.floors?.descended : nil
        engine.restoreToday(minutes, floorsDescended: descended)
        let today = engine.snapshot.today
        if today.steps > 0 {
            logger.info("today so far (since \(Timestamp.string(today.start, in: today.zone))): \(today.steps) steps")
        }
    }

    /// The path (its last day at 1 Hz) and the visits saved by earlier runs. A stay that was still going on
    /// when the daemon stopped ends at the last point saved within it: this run cannot know it went on.
    private static func restoreLocation(engine: Engine, store: StepStore, logger: Logger) {
        let limits = engine.configuration.location
        let stored: [StoredTrackPoint]
        var visits: [StoredVisit]
        do {
            stored = try store.latestTrackPoints(limit: limits.track.maximumPoints)
            visits = try store.latestVisits(limit: limits.visits.maximumVisits)
        } catch {
            // Said rather than dropped: the track and the visits of earlier runs are missing from this one's.
            let reason = (error as? StoreError).map(\.description) ?? StepStore.reason(error)
            logger.error("cannot read the saved track and visits (\(reason)); the track starts afresh")
            engine.locationRestoreFailed(reason)
            return
        }
        if let open = visits.indices.last, visits[open].departure == nil {
            let last = stored.last { $0.time >= visits[open].arrival }?.time ?? visits[open].arrival
            visits[open].departure = last
            store.record(.visit(visits[open]))
        }
        engine.restoreLocation(points: stored.map(\.fix), visits: visits.map(\.visit))
        if !stored.isEmpty || !visits.isEmpty {
            logger.info("continuing the track from \(stored.count) saved points and \(visits.count) visits")
        }
    }
}

/// The store as an engine observer: every step, floor, bout, reset, path point and visit is recorded.
public final class StoreRecorder: EngineObserver {
    private let store: StepStore

    init(store: StepStore) { self.store = store }

    public func engine(_ engine: Engine, emitted event: EngineEvent) {
        switch event {
        case let .step(count, time, strideMeters):
            store.record(.step(count: count, time: time, distanceMeters: strideMeters))
        case let .floors(added, total, time):
            store.record(.floors(added: added, total: total, time: time))
        case let .bout(measured, start, end, placement):
            let gait = measured.gait.rounded()
            store.record(.bout(StoredBout(start: start, end: end, steps: measured.bout.steps,
                                          cadenceStepsPerMinute: (measured.bout.cadenceStepsPerMinute * 10).rounded() / 10,
                                          gait: GaitMeasures(strideTimeSeconds: gait.strideTimeSeconds,
                                                             strideTimeCV: gait.strideTimeCV, regularity: gait.regularity,
                                                             symmetry: gait.symmetry, stepLengthMeters: gait.stepLengthMeters,
                                                             speedMetersPerSecond: gait.speedMetersPerSecond),
                                          placement: placement.rawValue)))
        case .activity(.stationary, _):
            // The walk's last steps are not followed by another that would carry them to the disk.
            store.flush()
        case .reset(let since):
            store.record(.reset(since: since))
        case .record(let record):
            store.record(record.storeWrite)
        default:
            break
        }
    }
}
