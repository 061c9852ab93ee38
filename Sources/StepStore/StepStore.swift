import Dispatch
import Foundation
import GRDB
import Locking
import Logging
import NIOConcurrencyHelpers
import StepProcessing
import Timekeeping

/// The history database: an SQLite file (WAL) in the state directory, written by `StoreWriter` from a queue
/// of its own so that the processing queue never waits for the disk. Everything to keep comes through
/// `record(_:)` into an inbox, and `CommitPolicy` says when the queue applies and commits it: `kill -9` loses
/// at most a commit interval (2 s), a clean stop, which calls `close()`, loses nothing.
///
/// A database that cannot be created, opened or written is a state, not a failure of the daemon: the
/// batch is kept, STATUS and the log say why, and the store tries again.
///
/// The queue is the database pool's one owner: it opens it and gives it up; reads lease it
/// (`DatabaseLeases`), and a pool given up is closed only once no read holds it.
///
/// Sendable by construction: what the queue owns is in `core` (a `Locked` value, taken only on the queue); the inbox,
/// the published status and `stopping` are behind locks of their own.
public final class StepStore: Sendable {
    public struct Configuration: Sendable {
        public var directory: String
        public var fileName = "stepd.sqlite"
        public var retentionDays = 400
        /// At most this much counting is lost to `kill -9` or a power cut of the process: the longest a write
        /// waits for its commit. A walk costs the store one wake-up per commit, one every 2 s or so.
        public var commitIntervalSeconds = 2.0
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
    /// The commit timer's clock and the times stamped on what is saved: a manual one in tests.
    public let clock: any DaemonClock
    private let policy: CommitPolicy
    let queue: DispatchQueue
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
    let stopping: NIOLockedValueBox<Bool>
    /// The pool as reads take it, from any thread.
    let leases: DatabaseLeases
    /// Everything the queue owns (StoreCore), reached only on `queue`.
    private let core: Locked<StoreCore>
    private let published: NIOLockedValueBox<StoreStatus>

    /// Called on the store's queue when the database becomes available after counting began without it, with
    /// the count it had saved. The owner adds that count to the one in memory and hands the sum back as
    /// `record(.counter(_))`, in order with the steps.
    public var onSavedCounter: (@Sendable (Counter) -> Void)? {
        get { core.withLock { $0.onSavedCounter } }
        set { core.withLock { $0.onSavedCounter = newValue } }
    }
    /// Called on the store's queue when a database is opened again after a fault (the directory may be new).
    public var onReopened: (@Sendable () -> Void)? {
        get { core.withLock { $0.onReopened } }
        set { core.withLock { $0.onReopened = newValue } }
    }

    /// Writes handed over from other queues, applied on `queue` in one go: a batch of samples yields several
    /// steps within microseconds, and one hop for all of them keeps the board asleep longer.
    struct Inbox {
        var writes: [StoreWrite] = []
        var handoff = CommitPolicy.Handoff()
        /// Drains the inbox a commit interval after a wait began, when no later write did (CommitPolicy);
        /// set, moved and cleared under this lock, so that a drain never clears the backstop of a newer wait.
        var backstop: (any ClockTimer)?
    }
    private let inbox: NIOLockedValueBox<Inbox>

    public init(configuration: Configuration, clock: any DaemonClock = SystemClock(),
                logger: Logger = Logger(label: "stepd.store")) {
        self.configuration = configuration
        self.clock = clock
        policy = configuration.commitPolicy
        let writer = StoreWriter(directory: configuration.directory, path: configuration.path)
        leases = writer.leases
        let queue = DispatchQueue(label: "stepd.store", qos: .utility)
        let inbox = NIOLockedValueBox(Inbox()), stopping = NIOLockedValueBox(false)
        let published = NIOLockedValueBox(StoreStatus(path: configuration.path, state: "starting", error: nil,
                                                      retentionDays: configuration.retentionDays, lastCommit: nil))
        (self.queue, self.inbox, self.stopping, self.published) = (queue, inbox, stopping, published)
        core = Locked(StoreCore(configuration: configuration, clock: clock, logger: logger, queue: queue, writer: writer,
                               inbox: inbox, published: published, stopping: stopping))
        let backstop = clock.makeQuietDeadline(queue: queue) { [weak self] in self?.onQueue { $0.drainAndCommit() } }
        inbox.withLockedValue { $0.backstop = backstop }
    }

    /// The store's state for STATUS; cheap, safe from any thread.
    public var status: StoreStatus { published.withLockedValue { $0 } }

    /// Runs `body` with what the queue owns; on the queue.
    func onQueue<R: Sendable>(_ body: (StoreCore) -> R) -> R {
        dispatchPrecondition(condition: .onQueue(queue))
        return core.withLock { body($0) }
    }

    // MARK: Life cycle

    /// Opens (creating the directory and file, migrating the schema), prunes old history, and returns the
    /// saved counter; without one (a new database, or one that cannot be opened) `fresh` is the counter.
    public func open(fresh: Counter) -> Counter {
        queue.sync { onQueue { $0.open(fresh: fresh) } }
    }

    /// Starts the timer (retrying a failed commit, reopening, hourly pruning).
    public func startCommitting() {
        queue.sync {
            onQueue { $0.startCommitting(onTick: { [weak self] in self?.onQueue { $0.tick() } }) }
        }
    }

    /// Commits what is pending and closes the file: the last thing a clean stop does. Returns the counter as
    /// committed, or nil when the final commit failed.
    @discardableResult
    public func close() -> Counter? {
        // Reads in flight stop at their next statement or row (SQLite's interrupt), so a stop never waits for
        // a client's long request; commits are on this queue and are not interrupted.
        stopping.withLockedValue { $0 = true }
        leases.interrupt()
        let saved = queue.sync { onQueue { $0.close() } }
        inbox.withLockedValue { $0.backstop?.cancel() }
        // The reads posted before the stop are on `readers` now (posted from this queue, which is done): each
        // gives up at once and answers; waiting for them lets whoever they answer (the socket server's event
        // loop) stop after them.
        readers.waitUntilAllOperationsAreFinished()
        return saved
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
        let now = clock.now
        let drainNow = inbox.withLockedValue { box -> Bool in
            if let write { box.writes.append(write) }
            switch policy.drain(urgency, waiting: box.writes.count, handoff: &box.handoff, now: now) {
            case .none: return false
            case .now: return true
            case .after(let seconds):
                box.backstop?.schedule(after: seconds)
                return false
            }
        }
        if drainNow { queue.async { [self] in onQueue { $0.drainAndCommit() } } }
    }

    /// Commits what is pending before a read, so that history agrees with STEPS; on the queue.
    func flushForReading() { onQueue { $0.flushForReading() } }

    /// Whether everything recorded so far is in the database (on the queue, after `flushForReading`): what
    /// the MQTT outbox waits for before it takes a minute as final.
    var isCaughtUp: Bool { onQueue { $0.isCaughtUp } }

    /// A write of the store's own besides the commits (the MQTT outbox), on the queue: the file is checked
    /// first, as before a commit.
    func transaction<T: Sendable>(_ body: (Database) throws -> T) -> Result<T, StoreError> {
        onQueue { $0.transaction(body) }
    }

    /// SQLite's own words ("file is not a database"), not GRDB's whole dump with the SQL. Without a final
    /// full stop: the reason sits inside a sentence ("...: permission denied; counting goes on in memory").
    package static func reason(_ error: Error) -> String {
        if let problem = error as? StoreFileProblem { return clause(problem.reason) }
        if let db = error as? DatabaseError { return clause(db.message ?? "\(db.resultCode)") }
        return clause((error as NSError).localizedDescription)
    }

    /// A reason made a clause: Foundation's sentences ("You don’t have permission.") lose their full stop.
    package static func clause(_ text: String) -> String {
        var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        while text.hasSuffix(".") { text.removeLast() }
        return text
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
