import Foundation

/// When the store writes, as a value: a clock reading and what is waiting go in, a decision comes out. No
/// I/O and no timer of its own, so each trigger is tested with an injected clock (CommitPolicyTests); StepStore
/// keeps the state (the handoff under its inbox's lock, the rest on its queue) and does what the policy says.
///
/// The triggers (docs/architecture.md, "Store"), coalesced by time and by count:
/// - a write (a step, floors, a track point, a visit) wakes the store's queue at once when the oldest write
///   waiting has waited `earlyDrainSeconds` (0.9 s of the 2 s interval), or when `mostWaiting` writes wait;
///   otherwise it waits for a later write. The write that starts a wait arms a backstop at the commit
///   interval (a `QuietDeadline`: moved and cleared without waking anyone), which bounds what `kill -9` can
///   lose when no later write comes. While writes keep coming (at least once a second while walking), the
///   drain comes from them before the backstop: a steady walk costs the store one wake-up per commit, a commit
///   every 2 s or so, and no timer;
/// - urgent writes (a reset, a count taken over) and the end of a walk (`flush`) wake it at once;
/// - every drain commits what it applied;
/// - the timer ticks fast only while something could not be written or a store is to be reopened, and seldom
///   otherwise (pruning, noticing a lost file);
/// - `close()` commits whatever is left.
struct CommitPolicy: Sendable, Equatable {
    /// At most this much counting is lost to `kill -9`: the longest a write waits in the inbox.
    var commitIntervalSeconds: Double
    /// How often a store that could not be opened, or lost its file, tries again.
    var reopenIntervalSeconds: Double
    /// Idle, the store wakes this seldom: a daemon with nothing to write should not wake its board.
    var idleTickSeconds = 30.0
    /// History older than the retention period is dropped this often.
    var pruneIntervalSeconds = 3600.0
    /// This many writes waiting drain at once, however young. A walk makes a few a second (steps at up to
    /// 3-4 a second, a track point a second, floors), under 20 in an interval; only writes faster than real
    /// time reach it (a replay at `--speed`, a source catching up), and there it keeps each commit's
    /// transaction and the inbox small and bounds what `kill -9` loses in writes as well as in time.
    var mostWaiting = 64

    /// A write finding the oldest waiting this long drains the inbox: under half the interval, so that with
    /// batches up to a second apart a write drains it before the backstop does (each wait then lasts one or
    /// two batches, a wait and the gap after it about the interval).
    var earlyDrainSeconds: Double { commitIntervalSeconds * 0.45 }

    /// How soon a recorded write wants to reach the disk.
    enum Urgency: Equatable {
        /// With the next batch, within a commit interval.
        case batched
        /// At once: a reset, a count taken over, the end of a walk.
        case now
    }

    /// What the recording side does for the writes waiting in the inbox.
    enum Drain: Equatable {
        /// Nothing: a drain is already on its way, or the writes wait for a later one (the backstop is armed).
        case none
        /// Wake the store's queue now to apply and commit them.
        case now
        /// Arm the backstop: wake it this much later, unless a write does so first (the drain clears it).
        case after(seconds: Double)
    }

    /// The handoff from the recording threads to the store's queue; kept under the inbox's lock.
    struct Handoff: Equatable {
        /// When the oldest write waiting was added; nil while the inbox is empty or a drain will take it.
        var oldestWaiting: Date?
        /// A drain is queued and has not yet taken the inbox.
        var drainScheduled = false

        /// The store's queue took the inbox (and cleared the backstop).
        mutating func drained() {
            drainScheduled = false
            oldestWaiting = nil
        }
    }

    /// After a write was added to the inbox (or a flush asked for): whether and when the store's queue is woken.
    /// `waiting` is how many writes the inbox holds.
    func drain(_ urgency: Urgency, waiting: Int, handoff: inout Handoff, now: Date) -> Drain {
        guard waiting > 0, !handoff.drainScheduled else { return .none }
        let startsWait = handoff.oldestWaiting == nil
        let oldest = handoff.oldestWaiting ?? now
        if urgency == .now || waiting >= mostWaiting || now.timeIntervalSince(oldest) >= earlyDrainSeconds {
            handoff.drainScheduled = true
            handoff.oldestWaiting = nil
            return .now
        }
        handoff.oldestWaiting = oldest
        return startsWait ? .after(seconds: commitIntervalSeconds) : .none
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
