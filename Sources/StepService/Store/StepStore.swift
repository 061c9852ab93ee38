import Dispatch
import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import StepProcessing

/// The history database: an SQLite file (WAL) in the state directory, written by `StoreWriter` from a queue
/// of its own so that the processing queue never waits for the disk. Everything to keep comes through
/// `record(_:)` into an inbox, and `CommitPolicy` says when the queue applies and commits it: `kill -9` loses
/// at most a commit interval or so, a clean stop, which calls `close()`, loses nothing.
///
/// A database that cannot be created, opened or written is a state, not a failure of the daemon: the
/// batch is kept, STATUS and the log say why, and the store tries again.
///
/// The queue is the database pool's one owner: it opens it and gives it up; reads lease it
/// (`DatabaseLeases`), and a pool given up is closed only once no read holds it.
///
/// `@unchecked Sendable`: its mutable state is owned by `queue` (checked with dispatchPrecondition), except
/// the inbox, the published status and `stopping`, which are behind locks.
public final class StepStore: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var directory: String
        public var fileName = "stepd.sqlite"
        public var retentionDays = 400
        /// At most this much counting is lost to `kill -9` or a power cut of the process.
        public var commitIntervalSeconds = 0.5
        /// How often a store that could not be opened, or lost its file, tries again: opening costs a few
        /// system calls, and a card remounted read-write should be used again within seconds.
        public var reopenIntervalSeconds = 5.0
        /// How long before it is counted a step can have happened: the configured detector's longest delay
        /// (`Engine.stepHoldBackSeconds`; a bout's first steps wait for its confirmation).
        public var stepHoldBackSeconds: Double
        public var path: String { (directory as NSString).appendingPathComponent(fileName) }

        public init(directory: String, stepHoldBackSeconds: Double) {
            self.directory = directory
            self.stepHoldBackSeconds = stepHoldBackSeconds
        }

        var commitPolicy: CommitPolicy {
            CommitPolicy(commitIntervalSeconds: commitIntervalSeconds, reopenIntervalSeconds: reopenIntervalSeconds)
        }

        /// The time a step (or a floor) is binned at. A step counted after `since` (a start or a reset) belongs to that
        /// period even when its bout began just before; binned at its own time it would fall before `since`,
        /// and a `history` from `since` would then sum to less than STEPS. Older times are left alone (a clock
        /// set back is not a bout).
        func binTime(of time: Date, since: Date) -> Date {
            time < since && since.timeIntervalSince(time) <= stepHoldBackSeconds ? since : time
        }
    }

    public let configuration: Configuration
    private let policy: CommitPolicy
    private let logger: Logger
    let queue = DispatchQueue(label: "stepd.store", qos: .utility)
    /// History, track and visit reads: beside the commits (a WAL reader sees the last committed state and
    /// never holds a commit back), two at a time (the boards have two to four cores; more requests wait here
    /// rather than each holding a thread).
    let readers: OperationQueue = {
        let readers = OperationQueue()
        readers.name = "stepd.store.read"
        readers.maxConcurrentOperationCount = 2
        readers.qualityOfService = .utility
        return readers
    }()
    /// Set when the daemon stops: reads in flight give up (see `close`).
    let stopping = NIOLockedValueBox(false)

    // Owned by `queue`.
    private let writer: StoreWriter
    var database: DatabasePool? { writer.database }
    /// The pool as reads take it, from any thread.
    var leases: DatabaseLeases { writer.leases }
    /// Whether `current` is known to continue the database's counter: read from it, written to it, or set by
    /// a reset. False when counting began while the store could not be opened: the saved count is then
    /// unknown, so this run's steps are added to it on recovery (`onSavedCounter`) rather than written over it.
    private var anchored = true
    private var pending = PendingWrites()
    private var current: Counter
    private(set) var failure: StoreError?
    private var timer: DispatchSourceTimer?
    /// The timer's pace; nil before `startCommitting`.
    private var pace: CommitPolicy.Pace?
    private var lastPrune = Date.distantPast
    private var lastOpenAttempt = Date.distantPast
    private var lastCommit: Date?
    private var closed = false

    private let published: NIOLockedValueBox<StoreStatus>

    /// Called on the store's queue when the database becomes available after counting began without it, with
    /// the count it had saved. The owner adds that count to the one in memory and hands the sum back as
    /// `record(.counter(_))`, in order with the steps.
    public var onSavedCounter: (@Sendable (Counter) -> Void)?
    /// Called on the store's queue when a database is opened again after a fault (the directory may be new).
    public var onReopened: (@Sendable () -> Void)?

    /// Writes handed over from other queues, applied on `queue` in one go: a batch of samples yields several
    /// steps within microseconds, and one hop for all of them keeps the board asleep longer.
    private struct Inbox {
        var writes: [StoreWrite] = []
        var handoff = CommitPolicy.Handoff()
    }
    private let inbox = NIOLockedValueBox(Inbox())

    public init(configuration: Configuration, logger: Logger = Logger(label: "stepd.store")) {
        self.configuration = configuration
        self.logger = logger
        policy = configuration.commitPolicy
        writer = StoreWriter(directory: configuration.directory, path: configuration.path)
        current = Counter(steps: 0, since: Date())
        published = NIOLockedValueBox(StoreStatus(path: configuration.path, state: "starting", error: nil,
                                                  retentionDays: configuration.retentionDays, lastCommit: nil))
    }

    /// The store's state for STATUS; cheap, safe from any thread.
    public var status: StoreStatus { published.withLockedValue { $0 } }

    // MARK: Life cycle

    /// Opens (creating the directory and file, migrating the schema), prunes old history, and returns the
    /// saved counter; without one (a new database, or one that cannot be opened) `fresh` is the counter.
    public func open(fresh: Counter) -> Counter {
        queue.sync {
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
            prune(now: Date())
            return current
        }
    }

    /// Starts the timer (retrying a failed commit, reopening, hourly pruning).
    public func startCommitting() {
        queue.sync {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.tick() }
            self.timer = timer
            schedule(.fast)
            timer.resume()
        }
    }

    /// Commits what is pending and closes the file: the last thing a clean stop does. Returns the counter as
    /// committed, or nil when the final commit failed.
    @discardableResult
    public func close() -> Counter? {
        // Reads in flight stop at their next statement or row (SQLite's interrupt), so a stop never waits for
        // a client's long request; commits are on this queue and are not interrupted.
        stopping.withLockedValue { $0 = true }
        writer.interrupt()
        return queue.sync {
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
    }

    // MARK: Recording (from any queue; applied in order on the store's)

    /// Keeps `write`: in the next commit, at once when it is urgent (a reset, a count taken over).
    public func record(_ write: StoreWrite) {
        post(write, write.urgency)
    }

    /// Commits what is waiting now rather than with the next write: when a walk ends, no later step will.
    public func flush() {
        post(nil, .now)
    }

    private func post(_ write: StoreWrite?, _ urgency: CommitPolicy.Urgency) {
        let now = Date()
        let drain = inbox.withLockedValue { box -> CommitPolicy.Drain in
            if let write { box.writes.append(write) }
            return policy.drain(urgency, waiting: !box.writes.isEmpty, handoff: &box.handoff, now: now)
        }
        switch drain {
        case .none:
            break
        case .now:
            queue.async { [self] in drainAndCommit() }
        case .after(let seconds):
            queue.asyncAfter(deadline: .now() + seconds) { [self] in
                inbox.withLockedValue { $0.handoff.deferredDrainFired() }
                drainAndCommit()
            }
        }
    }

    /// Applies the writes waiting in the inbox, in order; on `queue`, before anything that must see them.
    private func drainInbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        let writes = inbox.withLockedValue { box -> [StoreWrite] in
            defer {
                box.writes.removeAll(keepingCapacity: true)
                box.handoff.drained()
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
        }
    }

    /// A drain commits what it applied at once: the policy lets drains happen at most once per commit
    /// interval, so this is a steady stream's only wake-up. Leaving it to the timer would let a timer commit
    /// land between two batches of samples, after which every batch finds the last commit too recent and arms
    /// the timer again (two more wake-ups a batch, for good: seen as 8-10 wake-ups/s instead of 4.6 in
    /// scripts/bench-iio).
    private func drainAndCommit() {
        drainInbox()
        if database != nil { commit() }
        if !pending.isEmpty { schedule(.fast) }   // no database yet, or the write failed: the timer retries
    }

    // MARK: On the queue

    private func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        drainInbox()
        let now = Date()
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
                current = Counter(steps: saved.steps + current.steps, since: saved.since, floors: floors)
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
        lastOpenAttempt = Date()
        var reason = problem.reason
        let aside = configuration.path + ".changed-" + Self.asideStamp(Date())
        if problem.isChangedInPlace { reason += "; it is kept as \(aside)" }
        // Published before the reads in flight are stopped, so that they say why.
        setFailure(.lost(path: configuration.path, reason: reason))
        // Moved before the pool is closed: SQLite's last checkpoint skips a file that is no longer at its
        // path, so nothing of the store's log is copied into the stranger's file.
        if problem.isChangedInPlace {
            do { try writer.setAside(as: aside) } catch { logger.error("\(error)") }
        }
        writer.drop()
        schedule(.fast)
    }

    /// `20261126T134502Z`: a name part that sorts by time.
    private static func asideStamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    private func schedule(_ pace: CommitPolicy.Pace) {
        guard let timer, pace != self.pace else { return }
        self.pace = pace
        let interval = policy.tickSeconds(pace)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(policy.leewayMilliseconds(pace)))
    }

    private func openDatabase(waitingForReads: TimeInterval = 0) -> Bool {
        lastOpenAttempt = Date()
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
    func flushForReading() { commit() }

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
            try writer.write(batch)
            pending = PendingWrites()
            lastCommit = Date()
            logger.debug("store: committed \(batch.summary)")
            if failure != nil { logger.notice("store \(configuration.path) is writable again") }
            failure = nil
            publish()
        } catch {
            // Reopened on the timer; the batch stays pending. Published before the reads are stopped.
            setFailure(error)
            writer.drop()
            lastOpenAttempt = Date()
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
            if removed > 0 { logger.debug("store: pruned \(removed) rows older than \(configuration.retentionDays) days") }
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

    /// A write of the store's own besides the commits (the MQTT outbox), on the queue: the file is checked
    /// first, as before a commit.
    func transaction<T>(_ body: (Database) throws -> T) -> Result<T, StoreError> {
        dispatchPrecondition(condition: .onQueue(queue))
        checkFile()
        guard database != nil else {
            return .failure(.unavailable(reason: status.error ?? "the history database is not open"))
        }
        do {
            return .success(try writer.transaction(body))
        } catch {
            return .failure(.cannotWrite(path: configuration.path, reason: Self.reason(error)))
        }
    }

    /// SQLite's own words ("file is not a database"), not GRDB's whole dump with the SQL.
    static func reason(_ error: Error) -> String {
        if let problem = error as? StoreFileProblem { return problem.reason }
        if let db = error as? DatabaseError { return db.message ?? "\(db.resultCode)" }
        return (error as NSError).localizedDescription
    }
}

/// What STATUS says about the store.
public struct StoreStatus: Sendable, Equatable {
    public var path: String
    /// "starting", "ok", "failed" (see `error`), or "closed" during shutdown.
    public var state: String
    public var error: String?
    public var retentionDays: Int
    public var lastCommit: Date?
}
