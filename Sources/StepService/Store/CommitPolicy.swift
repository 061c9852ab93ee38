import Foundation

/// When the store writes, as a value: a clock reading and what is waiting go in, a decision comes out. No
/// I/O and no timer of its own, so each trigger is tested with an injected clock (CommitPolicyTests); StepStore
/// keeps the state (the handoff under its inbox's lock, the rest on its queue) and does what the policy says.
///
/// The triggers (docs/architecture.md, "Store"):
/// - a write (a step, floors, a track point, a visit) wakes the store's queue at once when the last wake-up
///   asked for is a commit interval old; otherwise it waits for the next such write, or for one drain deferred
///   to the end of the interval, which bounds what `kill -9` can lose;
/// - urgent writes (a reset, a count taken over) and the end of a walk (`flush`) wake it at once;
/// - every drain commits what it applied: a steady walk costs one wake-up per commit and no timer;
/// - the timer ticks fast only while something could not be written or a store is to be reopened, and seldom
///   otherwise (pruning, noticing a lost file);
/// - `close()` commits whatever is left.
struct CommitPolicy: Sendable, Equatable {
    /// At most this much counting is lost to `kill -9`.
    var commitIntervalSeconds: Double
    /// How often a store that could not be opened, or lost its file, tries again.
    var reopenIntervalSeconds: Double
    /// Idle, the store wakes this seldom: a daemon with nothing to write should not wake its board.
    var idleTickSeconds = 30.0
    /// History older than the retention period is dropped this often.
    var pruneIntervalSeconds = 3600.0

    /// How soon a recorded write wants to reach the disk.
    enum Urgency: Equatable {
        /// With the next batch, within a commit interval.
        case batched
        /// At once: a reset, a count taken over, the end of a walk.
        case now
    }

    /// What the recording side does for the writes waiting in the inbox.
    enum Drain: Equatable {
        /// Nothing: a drain is already on its way, or nothing waits.
        case none
        /// Wake the store's queue now to apply and commit them.
        case now
        /// Wake it this much later, unless another write does so first.
        case after(seconds: Double)
    }

    /// The handoff from the recording threads to the store's queue; kept under the inbox's lock.
    struct Handoff: Equatable {
        /// When the store's queue was last asked to drain at once.
        var lastDrainRequest = Date.distantPast
        /// A drain is queued and has not yet taken the inbox.
        var drainScheduled = false
        /// A deferred drain is armed (see `Drain.after`).
        var deferredDrainScheduled = false

        /// The store's queue took the inbox.
        mutating func drained() { drainScheduled = false }
        /// The deferred drain fired (it drains next).
        mutating func deferredDrainFired() { deferredDrainScheduled = false }
    }

    /// After a write was added to the inbox (or a flush asked for): whether and when the store's queue is woken.
    /// `waiting` says whether the inbox holds anything.
    func drain(_ urgency: Urgency, waiting: Bool, handoff: inout Handoff, now: Date) -> Drain {
        guard waiting, !handoff.drainScheduled else { return .none }
        let elapsed = now.timeIntervalSince(handoff.lastDrainRequest)
        if urgency == .now || elapsed >= commitIntervalSeconds {
            handoff.drainScheduled = true
            handoff.lastDrainRequest = now
            return .now
        }
        guard !handoff.deferredDrainScheduled else { return .none }
        handoff.deferredDrainScheduled = true
        return .after(seconds: commitIntervalSeconds - elapsed)
    }

    /// How often the store's timer ticks.
    enum Pace: Equatable {
        /// At the commit interval: a batch waits for a database that is away or failed.
        case fast
        /// Every `idleTickSeconds`: only pruning and watching the file.
        case idle
    }

    /// The timer's pace after a tick: fast while anything is pending or the database is not open.
    func pace(pendingEmpty: Bool, databaseOpen: Bool) -> Pace {
        pendingEmpty && databaseOpen ? .idle : .fast
    }

    func tickSeconds(_ pace: Pace) -> Double { pace == .fast ? commitIntervalSeconds : idleTickSeconds }

    func leewayMilliseconds(_ pace: Pace) -> Int { pace == .fast ? 50 : 1000 }

    /// Whether a store without a database tries to open one now.
    func shouldReopen(lastAttempt: Date, now: Date) -> Bool {
        now.timeIntervalSince(lastAttempt) >= reopenIntervalSeconds
    }

    /// Whether old history is dropped now.
    func isPruneDue(lastPrune: Date, now: Date) -> Bool {
        now.timeIntervalSince(lastPrune) >= pruneIntervalSeconds
    }
}
