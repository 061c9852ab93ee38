import Dispatch
import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import StepProcessing
import StepProtocol
import Timekeeping

/// What the store's queue owns: the writer and its pool, the count as it stands, the batch not yet committed,
/// the failure, the timer. `StepStore` keeps it in a `Locked` value and reaches it only from `queue` (each entry point
/// below checks that too), so the lock is never contended; the lock is what lets the compiler check that
/// nothing else touches it.
final class StoreCore {
    typealias Counter = StepStore.Counter

    let configuration: StepStore.Configuration
    let clock: any DaemonClock
    private let policy: CommitPolicy
    private let logger: Logger
    private let queue: DispatchQueue
    private let writer: StoreWriter
    private let inbox: NIOLockedValueBox<StepStore.Inbox>
    private let published: NIOLockedValueBox<StoreStatus>
    private let stopping: NIOLockedValueBox<Bool>

    var database: DatabasePool? { writer.database }
    /// Whether `current` is known to continue the database's counter: read from it, written to it, or set by
    /// a reset. False when counting began while the store could not be opened: the saved count is then
    /// unknown, so this run's steps are added to it on recovery (`onSavedCounter`) rather than written over it.
    private var anchored = true
    private var pending = PendingWrites()
    private var current: Counter
    private(set) var failure: StoreError?
    private var timer: (any ClockTimer)?
    /// The timer's pace; nil before `startCommitting`.
    private var pace: CommitPolicy.Pace?
    private var lastPrune = Date.distantPast
    private var lastOpenAttempt = Date.distantPast
    private var lastCommit: Date?
    private var closed = false

    /// See `StepStore.onSavedCounter` and `StepStore.onReopened`.
    var onSavedCounter: (@Sendable (Counter) -> Void)?
    var onReopened: (@Sendable () -> Void)?

    init(configuration: StepStore.Configuration, clock: any DaemonClock, logger: Logger, queue: DispatchQueue, writer: StoreWriter,
         inbox: NIOLockedValueBox<StepStore.Inbox>, published: NIOLockedValueBox<StoreStatus>,
         stopping: NIOLockedValueBox<Bool>) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.queue = queue
        self.writer = writer
        self.inbox = inbox
        self.published = published
        self.stopping = stopping
        policy = configuration.commitPolicy
        current = Counter(steps: 0, since: clock.now)
    }

    // MARK: Life cycle

    func open(fresh: Counter) -> Counter {
        dispatchPrecondition(condition: .onQueue(queue))
        current = fresh
        if openDatabase() {
            if let saved = readCounter() {
                current = saved
            } else if database != nil {
                pending.setCounter(fresh)
                commit()
            }
            anchored = database != nil
        } else if let saved = writer.readOnlyCounter() {
            // Readable but not writable (a card mounted read-only): the count goes on from the saved one.
            current = saved
            anchored = true
        } else {
            // Counting starts from `fresh`; the saved count, once readable, is added to it.
            anchored = false
        }
        prune(now: clock.now)
        return current
    }

    func startCommitting(onTick: @escaping @Sendable () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        timer = clock.makeTimer(queue: queue, handler: onTick)
        schedule(.fast)
    }

    func close() -> Counter? {
        dispatchPrecondition(condition: .onQueue(queue))
        timer?.cancel()
        timer = nil
        drainInbox()
        // A file changed since the last commit is set aside even with nothing left to write: the count
        // is "saved" only in a file the store wrote.
        checkFile()
        // The last chance to save: a file lost a moment ago has not been reopened yet (the retry waits a
        // reopen interval), and the count would be lost with the process.
        if database == nil, !closed { reopen(waitingForReads: 2) }
        commit()
        let saved = failure == nil && database != nil && anchored ? current : nil
        do { try writer.close() } catch { logger.notice("closing \(configuration.path): \(error)") }
        closed = true
        publish()
        return saved
    }

    // MARK: Applying what was recorded

    /// Applies the writes waiting in the inbox, in order; on `queue`, before anything that must see them.
    private func drainInbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        let writes = inbox.withLockedValue { box -> [StoreWrite] in
            defer {
                box.writes.removeAll(keepingCapacity: true)
                box.handoff.drained()
                box.backstop?.clear()
            }
            return box.writes
        }
        guard !closed else { return }
        for write in writes { apply(write) }
    }

    private func apply(_ write: StoreWrite) {
        switch write {
        case let .step(count, time, distanceMeters):
            current.steps = count
            current.distanceMeters += distanceMeters
            pending.addStep(at: configuration.binTime(of: time, since: current.since), distanceMeters: distanceMeters)
            pending.setCounter(current)
        case let .floors(added, total, time):
            current.floors = total
            // The history keeps the floors climbed; the descents live in the counter only.
            if added.ascended > 0 {
                pending.addFloors(added.ascended, at: configuration.binTime(of: time, since: current.since))
            }
            pending.setCounter(current)
        case let .reset(since):
            // A reset is the user's word on the count, whatever a store that was away had saved.
            current = Counter(steps: 0, since: since)
            pending.setCounter(current)
            anchored = true
        case let .counter(counter):
            current = counter
            pending.setCounter(counter)
            anchored = true
        case let .trackPoint(point):
            pending.add(point)
        case let .visit(visit):
            pending.add(visit)
        case let .bout(bout):
            pending.add(bout)
        }
    }

    /// A drain commits what it applied at once: the policy coalesces writes into a drain every interval or so,
    /// so this is a steady stream's only wake-up. Leaving it to the timer would let a timer commit land between
    /// two batches of samples, after which every batch finds the last commit too recent and arms the timer
    /// again (two more wake-ups a batch, for good).
    ///
    /// A batch's steps are recorded microseconds apart, and the drain asked for by the first may take the inbox
    /// before the rest are in: those are taken by a second commit in the same wake-up. Left waiting, they
    /// would start the next wait at once, and bring the next drain a batch sooner (a commit every 1.3 s
    /// instead of 2 s while walking).
    func drainAndCommit() {
        drainInbox()
        if database != nil {
            commit()
            commit()
        }
        if !pending.isEmpty { schedule(.fast) }   // no database yet, or the write failed: the timer retries
    }

    // MARK: The timer

    func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        drainInbox()
        let now = clock.now
        if database == nil, !closed, policy.shouldReopen(lastAttempt: lastOpenAttempt, now: now) { reopen() }
        if !pending.isEmpty { commit() }
        if policy.isPruneDue(lastPrune: lastPrune, now: now) { prune(now: now) }
        checkFile()
        schedule(policy.pace(pendingEmpty: pending.isEmpty, databaseOpen: database != nil))
    }

    /// The database is back (or new): this run's steps join what it saved, never replace it.
    private func reopen(waitingForReads: TimeInterval = 0) {
        guard openDatabase(waitingForReads: waitingForReads) else { return }
        onReopened?()
        if anchored {
            // This run's count continued the saved one (the file was lost, not the count): it is the count.
            pending.setCounter(current)
        } else if let saved = readCounter() {
            logger.notice("store: adding the \(saved.steps) steps saved since \(saved.since) to the \(current.steps) counted meanwhile")
            // At the stop the sum is made here: the owner's answer would come after the last commit.
            if let onSavedCounter, !stopping.withLockedValue({ $0 }) {
                onSavedCounter(saved)
            } else {
                let floors = saved.floors.map { $0 + (current.floors ?? .zero) } ?? current.floors
                current = Counter(steps: saved.steps.addingSaturated(current.steps), since: saved.since,
                                  distanceMeters: saved.distanceMeters + current.distanceMeters, floors: floors)
                anchored = true
                pending.setCounter(current)
            }
        } else if database != nil {
            anchored = true
            pending.setCounter(current)
        }
    }

    /// Gives up a database whose file is no longer the one at the path; the batch stays pending for the
    /// file that takes its place. A file changed in place by another program is moved aside first, so that
    /// the next open makes a fresh database for the count in memory rather than going on in the stranger's.
    private func checkFile() {
        guard let problem = writer.checkFile() else { return }
        // Held for a reopen interval, so that the state is seen and a directory being replaced can settle.
        lastOpenAttempt = clock.now
        var reason = problem.reason
        let aside = configuration.path + ".changed-" + Self.asideStamp(clock.now)
        if problem.isChangedInPlace { reason += "; it is kept as \(aside)" }
        // Published before the reads in flight are stopped, so that they say why.
        setFailure(.lost(path: configuration.path, reason: reason))
        // Moved before the pool is closed: SQLite's last checkpoint skips a file that is no longer at its
        // path, so nothing of the store's log is copied into the stranger's file.
        if problem.isChangedInPlace {
            do { try writer.setAside(as: aside) } catch { logger.error("\(error)") }
        }
        if problem == .replaced {
            let logAside = configuration.path + ".replaced-" + Self.asideStamp(clock.now)
            do {
                if try writer.setAsideOwnLog(as: logAside) {
                    logger.notice("store \(configuration.path): another file was put in its place; the old file's write-ahead log is kept as \(logAside)-wal, so that it is not replayed over the new one")
                }
            } catch { logger.error("\(error)") }
        }
        writer.drop()
        schedule(.fast)
    }

    /// `20261126T134502Z`: a name part that sorts by time.
    private static func asideStamp(_ date: Date) -> String {
        let utc = Timestamp.string(date)  // 2026-11-26T13:45:02.123Z
        return utc.prefix(19).filter { $0 != "-" && $0 != ":" } + "Z"
    }

    private func schedule(_ pace: CommitPolicy.Pace) {
        guard let timer, pace != self.pace else { return }
        self.pace = pace
        let interval = policy.tickSeconds(pace)
        timer.schedule(after: interval, repeating: interval, leewaySeconds: Double(policy.leewayMilliseconds(pace)) / 1000)
    }

    // MARK: The database

    private func openDatabase(waitingForReads: TimeInterval = 0) -> Bool {
        lastOpenAttempt = clock.now
        do {
            try writer.open(waitingForReads: waitingForReads)
        } catch {
            setFailure(error)
            return false
        }
        if failure != nil { logger.notice("store \(configuration.path) is available again") }
        failure = nil
        publish()
        return true
    }

    func readCounter() -> Counter? {
        do { return try writer.readCounter() } catch {
            setFailure(error)
            return nil
        }
    }

    /// Commits what is pending before a read, so that history agrees with STEPS; on the queue.
    func flushForReading() {
        dispatchPrecondition(condition: .onQueue(queue))
        commit()
    }

    /// Whether everything recorded so far is in the database (on the queue, after `flushForReading`): what
    /// the MQTT outbox waits for before it takes a minute as final.
    var isCaughtUp: Bool { database != nil && pending.isEmpty && inbox.withLockedValue { $0.writes.isEmpty } }

    private func commit() {
        drainInbox()
        guard !pending.isEmpty, database != nil else { return }
        checkFile()
        guard database != nil else { return }
        let batch = anchored ? pending : pending.withoutCounter
        do {
            try writer.write(batch, at: clock.now)
            pending = PendingWrites()
            lastCommit = clock.now
            logger.debug("store: committed \(batch.summary)")
            if failure != nil { logger.notice("store \(configuration.path) is writable again") }
            failure = nil
            publish()
        } catch {
            // Reopened on the timer; the batch stays pending. Published before the reads are stopped.
            setFailure(error)
            writer.drop()
            lastOpenAttempt = clock.now
            schedule(.fast)
        }
    }

    /// Drops history older than the retention period.
    private func prune(now: Date) {
        lastPrune = now
        checkFile()
        let cutoff = now.addingTimeInterval(-Double(configuration.retentionDays) * 86_400)
        do {
            let removed = try writer.prune(olderThan: cutoff)
            // Said at info: a replayed log dated years back, or a clock set wrong, loses its history here, and
            // the journal is where a user looks for where it went.
            if removed.total > 0 {
                let before = Timestamp.string(cutoff)
                logger.info("store: removed \(removed.description) older than \(configuration.retentionDays) days (before \(before)); retention_days sets how long history is kept")
            }
        } catch {
            setFailure(error)
        }
    }

    private func setFailure(_ error: StoreError) {
        if failure != error { logger.error("\(error)") }
        failure = error
        publish()
    }

    private func publish() {
        let state = closed ? "closed" : failure != nil ? "failed" : database != nil ? "ok" : "starting"
        let status = StoreStatus(path: configuration.path, state: state, error: failure?.description,
                                 retentionDays: configuration.retentionDays, lastCommit: lastCommit)
        published.withLockedValue { $0 = status }
    }

    /// See `StepStore.transaction`.
    func transaction<T>(_ body: (Database) throws -> T) -> Result<T, StoreError> {
        dispatchPrecondition(condition: .onQueue(queue))
        checkFile()
        guard database != nil else {
            return .failure(.unavailable(reason: published.withLockedValue { $0.error } ?? "the history database is not open"))
        }
        do {
            return .success(try writer.transaction(body))
        } catch {
            return .failure(.cannotWrite(path: configuration.path, reason: StepStore.reason(error)))
        }
    }
}
