import Dispatch
import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import StepProcessing

/// The history database: an SQLite file (WAL) in the state directory, written by GRDB from a queue of its
/// own so that the processing queue never waits for the disk. Steps are added to an in-memory batch and
/// committed every `commitIntervalSeconds`, so `kill -9` loses at most that much and a clean stop, which
/// calls `close()`, loses nothing.
///
/// A database that cannot be created, opened or written is a state, not a failure of the daemon: the
/// batch is kept, STATUS and the log say why, and the store tries again.
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
        public var path: String { (directory as NSString).appendingPathComponent(fileName) }

        public init(directory: String) { self.directory = directory }
    }

    /// The count since the last reset and when that reset was.
    public struct Counter: Sendable, Equatable {
        public var steps: Int
        public var since: Date
        public init(steps: Int, since: Date) {
            self.steps = steps
            self.since = since
        }
    }

    public let configuration: Configuration
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

    // Owned by `queue`; `interruptible` is the same pool for `close()` to interrupt from its own thread.
    private(set) var database: DatabasePool? {
        didSet { interruptible.withLockedValue { $0 = database } }
    }
    private let interruptible = NIOLockedValueBox<DatabasePool?>(nil)
    private var identity: StoreFileIdentity?
    /// Whether `current` is known to continue the database's counter: read from it, written to it, or set by
    /// a reset. False when counting began while the store could not be opened: the saved count is then
    /// unknown, so this run's steps are added to it on recovery (`onSavedCounter`) rather than written over it.
    private var anchored = true
    private var pending = PendingWrites()
    private var current: Counter
    private(set) var failure: StoreError?
    private var timer: DispatchSourceTimer?
    /// Whether the timer ticks at the commit interval (work pending) or slowly (only pruning and reopening).
    private var ticking = false
    /// Idle, the store wakes this seldom: a daemon with nothing to write should not wake its board.
    private static let idleTickSeconds = 30.0
    private var lastPrune = Date.distantPast
    private var lastOpenAttempt = Date.distantPast
    private var lastCommit: Date?
    private var closed = false

    private let published: NIOLockedValueBox<StoreStatus>

    /// Called on the store's queue when the database becomes available after counting began without it, with
    /// the count it had saved. The owner adds that count to the one in memory and hands the sum back through
    /// `recordCounter`, in order with the steps.
    public var onSavedCounter: (@Sendable (Counter) -> Void)?
    /// Called on the store's queue when a database is opened again after a fault (the directory may be new).
    public var onReopened: (@Sendable () -> Void)?

    /// Steps and resets handed over from the processing queue, applied on `queue` in one go: a batch of
    /// samples yields several steps within microseconds, and one hop for all of them keeps the board asleep
    /// longer. Resets travel in the same list so that a step recorded after a reset is applied after it.
    private enum Entry {
        case step(count: Int, time: Date, distanceMeters: Double)
        case reset(since: Date)
        case counter(Counter)
    }
    private struct Inbox {
        var entries: [Entry] = []
        var drainScheduled = false
        /// When the store's queue was last asked to drain: a step waits for the next one to arrive, or
        /// for `flush()` at the end of a walk, until a commit interval has passed, so a steady walk costs the
        /// store one wake-up per commit and no timer.
        var lastDrainRequest = Date.distantPast
        /// A drain is due later (a step came sooner than a commit interval after the last drain): the bound
        /// on what `kill -9` can lose when no further step and no `flush()` comes.
        var deferredDrainScheduled = false
    }
    private let inbox = NIOLockedValueBox(Inbox())

    public init(configuration: Configuration, logger: Logger = Logger(label: "stepd.store")) {
        self.configuration = configuration
        self.logger = logger
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
                    pending.setCounter(steps: fresh.steps, since: fresh.since)
                    commit()
                }
                anchored = database != nil
            } else if let saved = readOnlyCounter() {
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

    /// Starts the periodic commit (and hourly pruning, and reopening a store that failed to open).
    public func startCommitting() {
        queue.sync {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.tick() }
            self.timer = timer
            schedule(fast: true)
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
        interruptible.withLockedValue { $0 }?.interrupt()
        return queue.sync {
            timer?.cancel()
            timer = nil
            commit()
            let saved = failure == nil && database != nil && anchored ? current : nil
            if let database {
                do { try database.close() } catch { logger.debug("closing \(configuration.path): \(error)") }
            }
            database = nil
            closed = true
            publish()
            return saved
        }
    }

    // MARK: Recording (from any queue; applied in order on the store's)

    public func recordStep(count: Int, at time: Date, distanceMeters: Double) {
        post(.step(count: count, time: time, distanceMeters: distanceMeters), now: false)
    }

    /// Commits what is waiting now rather than with the next step: when a walk ends, no later step will.
    public func flush() {
        post(nil, now: true)
    }

    private enum DrainRequest { case none, now, after(TimeInterval) }

    private func post(_ entry: Entry?, now: Bool) {
        let interval = configuration.commitIntervalSeconds
        let request = inbox.withLockedValue { box -> DrainRequest in
            if let entry { box.entries.append(entry) }
            guard !box.entries.isEmpty, !box.drainScheduled else { return .none }
            let time = Date()
            let elapsed = time.timeIntervalSince(box.lastDrainRequest)
            if now || elapsed >= interval {
                box.drainScheduled = true
                box.lastDrainRequest = time
                return .now
            }
            guard !box.deferredDrainScheduled else { return .none }
            box.deferredDrainScheduled = true
            return .after(interval - elapsed)
        }
        switch request {
        case .none:
            break
        case .now:
            queue.async { [self] in
                drainInbox()
                commitDrained()
            }
        case .after(let delay):
            queue.asyncAfter(deadline: .now() + delay) { [self] in
                inbox.withLockedValue { $0.deferredDrainScheduled = false }
                drainInbox()
                commitDrained()
            }
        }
    }

    /// Applies the steps and resets waiting in the inbox, in order; on `queue`, before anything that must
    /// see them.
    private func drainInbox() {
        let entries = inbox.withLockedValue { box -> [Entry] in
            defer {
                box.entries.removeAll(keepingCapacity: true)
                box.drainScheduled = false
            }
            return box.entries
        }
        guard !closed else { return }
        for entry in entries {
            switch entry {
            case let .step(count, time, distanceMeters):
                current.steps = count
                pending.addStep(count: count, since: current.since, at: Self.binTime(of: time, since: current.since),
                                distanceMeters: distanceMeters)
            case let .reset(since):
                // A reset is the user's word on the count, whatever a store that was away had saved.
                current = Counter(steps: 0, since: since)
                pending.setCounter(steps: 0, since: since)
                anchored = true
            case let .counter(counter):
                current = counter
                pending.setCounter(steps: counter.steps, since: counter.since)
                anchored = true
            }
        }
    }

    /// How long before it is counted a step can have happened: a bout's first steps are held back until it is
    /// confirmed (WalkingBout: `confirmationSteps` steps at most `maximumStepIntervalSeconds` apart), plus a
    /// second of filtering.
    static let longestHoldBackSeconds: TimeInterval = {
        let bout = WalkingBout.Configuration()
        return Double(bout.confirmationSteps) * bout.maximumStepIntervalSeconds + 1
    }()

    /// The time a step is binned at. A step counted after `since` (a start or a reset) belongs to that period
    /// even when its bout began just before; binned at its own time it would fall before `since`, and a
    /// `history` from `since` would then sum to less than STEPS. Older times are left alone (a clock set
    /// back is not a bout).
    static func binTime(of time: Date, since: Date) -> Date {
        time < since && since.timeIntervalSince(time) <= longestHoldBackSeconds ? since : time
    }

    /// Floors climbed (from the barometer) in the minute of `time`.
    public func recordFloors(_ floors: Int, at time: Date) {
        queue.async { [self] in if !closed { pending.addFloors(floors, at: time); wake() } }
    }

    public func recordReset(since: Date) {
        post(.reset(since: since), now: true)
    }

    /// The count after the engine took over a saved one (see `onSavedCounter`), in order with the steps.
    public func recordCounter(_ counter: Counter) {
        post(.counter(counter), now: true)
    }

    public func record(_ point: StoredTrackPoint) {
        queue.async { [self] in if !closed { pending.add(point); wake() } }
    }

    public func record(_ visit: StoredVisit) {
        queue.async { [self] in if !closed { pending.add(visit); wake() } }
    }

    // MARK: On the queue

    private func tick() {
        drainInbox()
        let now = Date()
        if database == nil, !closed, now.timeIntervalSince(lastOpenAttempt) >= configuration.reopenIntervalSeconds {
            reopen()
        }
        if !pending.isEmpty { commit() }
        if now.timeIntervalSince(lastPrune) >= 3600 { prune(now: now) }
        if database != nil { checkFile() }
        if pending.isEmpty && database != nil { schedule(fast: false) }
    }

    /// The database is back (or new): this run's steps join what it saved, never replace it.
    private func reopen() {
        guard openDatabase() else { return }
        onReopened?()
        if anchored {
            // This run's count continued the saved one (the file was lost, not the count): it is the count.
            pending.setCounter(steps: current.steps, since: current.since)
        } else if let saved = readCounter() {
            logger.notice("store: adding the \(saved.steps) steps saved since \(saved.since) to the \(current.steps) counted meanwhile")
            if let onSavedCounter {
                onSavedCounter(saved)
            } else {
                current = Counter(steps: saved.steps + current.steps, since: saved.since)
                anchored = true
                pending.setCounter(steps: current.steps, since: current.since)
            }
        } else if database != nil {
            anchored = true
            pending.setCounter(steps: current.steps, since: current.since)
        }
    }

    /// Gives up a database whose file is no longer the one at the path; the batch stays pending for the
    /// file that takes its place.
    private func checkFile() {
        guard let database, let identity else { return }
        let problem: StoreFileProblem
        switch StoreFileIdentity.of(path: configuration.path) {
        case .success(let now) where now == identity: return
        case .success: problem = .replaced
        case .failure(let why): problem = why
        }
        self.database = nil
        self.identity = nil
        try? database.close()
        // Held for a reopen interval, so that the state is seen and a directory being replaced can settle.
        lastOpenAttempt = Date()
        setFailure(.lost(path: configuration.path, reason: problem.reason))
        schedule(fast: true)
    }

    /// Ticks at the commit interval while there is something to write or a store to reopen, else slowly.
    private func schedule(fast: Bool) {
        guard let timer, fast != ticking else { return }
        ticking = fast
        let interval = fast ? configuration.commitIntervalSeconds : Self.idleTickSeconds
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(fast ? 50 : 1000))
    }

    /// After a drain of the inbox: commits at once. post() drains at most once per commit interval, so this
    /// is the steady stream's only wake-up. Leaving it to wake() would let a timer commit land between two
    /// batches of samples, after which every batch finds the last commit too recent and arms the timer again
    /// (two more wake-ups a batch, for good: seen as 8-10 wake-ups/s instead of 4.6 in scripts/bench-iio).
    private func commitDrained() {
        if database != nil, !pending.isEmpty { commit() }
        if !pending.isEmpty { wake() }   // no database yet, or the write failed: the timer retries
    }

    /// Called on the queue whenever something is recorded: commits now when the last commit is a commit
    /// interval old (so a steady stream needs no timer wake-ups of its own), else makes sure the timer will.
    private func wake() {
        if database != nil, Date().timeIntervalSince(lastCommit ?? .distantPast) >= configuration.commitIntervalSeconds * 0.9 {
            commit()
        } else if !ticking {
            schedule(fast: true)
        }
    }

    private func openDatabase() -> Bool {
        lastOpenAttempt = Date()
        if let damage = WriteAheadLog.damage(at: configuration.path + "-wal") {
            setFailure(.damagedLog(path: configuration.path + "-wal", reason: damage))
            return false
        }
        let directory = configuration.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        } catch {
            setFailure(.cannotCreateDirectory(path: directory, reason: Self.reason(error)))
            return false
        }
        // SQLite opens a read-only file without complaint and fails only at the first write; a connection
        // opened then stays read-only after a remount, so it is not opened until the place is writable.
        for place in [directory, configuration.path] where access(place, W_OK) != 0 && errno != ENOENT {
            setFailure(.cannotWrite(path: configuration.path, reason: "\(place): \(String(cString: strerror(errno)))"))
            return false
        }
        var config = GRDB.Configuration()
        config.journalMode = .wal
        config.label = "stepd.store"
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            // In WAL mode NORMAL keeps every committed transaction across a crash of the process (the WAL is
            // in the page cache) and syncs only at checkpoints, sparing the SD card of a small board.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Each commit writes the pages it touched (a minute bin's and the counter's) to the WAL: small
            // pages make that 2 KiB rather than 8 KiB twice a second of walking. Takes effect on a new file.
            try db.execute(sql: "PRAGMA page_size = 1024")
        }
        do {
            let db = try DatabasePool(path: configuration.path, configuration: config)
            try StoreSchema.migrator.migrate(db)
            guard case .success(let opened) = StoreFileIdentity.of(path: configuration.path) else {
                try? db.close()
                setFailure(.cannotOpen(path: configuration.path, reason: "the file vanished as it was opened"))
                return false
            }
            database = db
            identity = opened
            if failure != nil { logger.notice("store \(configuration.path) is available again") }
            failure = nil
            publish()
            return true
        } catch {
            setFailure(.cannotOpen(path: configuration.path, reason: Self.reason(error)))
            return false
        }
    }

    /// The saved counter of a file that cannot be opened for writing, or nil.
    private func readOnlyCounter() -> Counter? {
        guard FileManager.default.fileExists(atPath: configuration.path),
              WriteAheadLog.damage(at: configuration.path + "-wal") == nil else { return nil }
        var config = GRDB.Configuration()
        config.readonly = true
        guard let db = try? DatabaseQueue(path: configuration.path, configuration: config) else { return nil }
        defer { try? db.close() }
        return try? db.read { db in
            try Row.fetchOne(db, sql: "SELECT steps, since FROM counter WHERE id = 1").map {
                Counter(steps: $0[0], since: Date(timeIntervalSince1970: $0[1]))
            }
        }
    }

    func readCounter() -> Counter? {
        guard let database else { return nil }
        do {
            return try database.read { db in
                try Row.fetchOne(db, sql: "SELECT steps, since FROM counter WHERE id = 1").map {
                    Counter(steps: $0[0], since: Date(timeIntervalSince1970: $0[1]))
                }
            }
        } catch {
            setFailure(.cannotRead(path: configuration.path, reason: Self.reason(error)))
            return nil
        }
    }

    /// Commits what is pending before a read, so that history agrees with STEPS; on the queue.
    func flushForReading() { commit() }

    /// Whether everything recorded so far is in the database (on the queue, after `flushForReading`): what
    /// the MQTT outbox waits for before it takes a minute as final.
    var isCaughtUp: Bool { database != nil && pending.isEmpty && inbox.withLockedValue { $0.entries.isEmpty } }

    private func commit() {
        drainInbox()
        guard !pending.isEmpty, database != nil else { return }
        checkFile()
        guard let database else { return }
        let batch = anchored ? pending : pending.withoutCounter
        do {
            do {
                try database.write { db in try Self.write(batch, into: db) }
            } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT {
                // close() interrupts the whole pool to stop the readers; a commit caught in it runs again.
                try database.write { db in try Self.write(batch, into: db) }
            }
            pending = PendingWrites()
            lastCommit = Date()
            logger.debug("store: committed \(batch.summary)")
            if failure != nil { logger.notice("store \(configuration.path) is writable again") }
            failure = nil
            publish()
        } catch {
            setFailure(.cannotWrite(path: configuration.path, reason: Self.reason(error)))
            // Reopened on the timer: a connection that met a read-only file or a full disk may keep failing
            // after the cause is gone. The batch stays pending.
            self.database = nil
            identity = nil
            try? database.close()
            lastOpenAttempt = Date()
            schedule(fast: true)
        }
    }

    private static func write(_ batch: PendingWrites, into db: Database) throws {
        for (minute, delta) in batch.minutes {
            try db.execute(sql: """
                INSERT INTO minute_bin (minute, steps, distance_m, floors) VALUES (?, ?, ?, ?)
                ON CONFLICT(minute) DO UPDATE SET steps = steps + excluded.steps,
                    distance_m = distance_m + excluded.distance_m,
                    floors = CASE WHEN excluded.floors IS NULL THEN floors
                                  ELSE coalesce(floors, 0) + excluded.floors END
                """, arguments: [minute, delta.steps, delta.distanceMeters, delta.floors])
        }
        if let counter = batch.counter {
            try db.execute(sql: """
                INSERT INTO counter (id, steps, since, updated) VALUES (1, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET steps = excluded.steps, since = excluded.since, updated = excluded.updated
                """, arguments: [counter.steps, counter.since.timeIntervalSince1970, Date().timeIntervalSince1970])
        }
        for p in batch.trackPoints {
            try db.execute(sql: """
                INSERT INTO track_point (time, latitude_deg, longitude_deg, altitude_msl_m, eph_m, mode, satellites_used)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [p.time.timeIntervalSince1970, p.latitudeDegrees, p.longitudeDegrees,
                                 p.altitudeMSLMeters, p.ephMeters, p.mode, p.satellitesUsed])
        }
        for v in batch.visits.values {
            try db.execute(sql: """
                INSERT OR REPLACE INTO visit (arrival, departure, latitude_deg, longitude_deg, radius_m, fix_count)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [v.arrival.timeIntervalSince1970, v.departure?.timeIntervalSince1970,
                                 v.latitudeDegrees, v.longitudeDegrees, v.radiusMeters, v.fixCount])
        }
    }

    /// Drops history older than the retention period.
    private func prune(now: Date) {
        lastPrune = now
        guard let database else { return }
        let cutoff = now.addingTimeInterval(-Double(configuration.retentionDays) * 86_400)
        do {
            let removed = try database.write { db -> Int in
                try db.execute(sql: "DELETE FROM minute_bin WHERE minute < ?",
                               arguments: [PendingWrites.minute(of: cutoff)])
                var count = db.changesCount
                try db.execute(sql: "DELETE FROM track_point WHERE time < ?", arguments: [cutoff.timeIntervalSince1970])
                count += db.changesCount
                try db.execute(sql: "DELETE FROM visit WHERE coalesce(departure, arrival) < ?",
                               arguments: [cutoff.timeIntervalSince1970])
                return count + db.changesCount
            }
            if removed > 0 { logger.debug("store: pruned \(removed) rows older than \(configuration.retentionDays) days") }
        } catch {
            setFailure(.cannotWrite(path: configuration.path, reason: Self.reason(error)))
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
