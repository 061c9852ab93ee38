import Foundation
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// When the store commits, decided by `CommitPolicy` from an injected clock: no store, no queue, no sleep.
final class CommitPolicyTests: XCTestCase {
    private let policy = CommitPolicy(commitIntervalSeconds: 2, reopenIntervalSeconds: 5)
    /// Near the reference date, so that the clock's Double keeps sub-microsecond differences exact enough.
    private let t0 = Date(timeIntervalSinceReferenceDate: 0)

    private func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    func testTheStoreLosesAtMostTwoSecondsToKill9() {
        XCTAssertEqual(StepStore.Configuration(directory: "/nonexistent", stepHoldBackSeconds: 0).commitIntervalSeconds, 2)
        XCTAssertEqual(policy.earlyDrainSeconds, 0.9, accuracy: 1e-9)
    }

    /// A write to an empty inbox wakes nobody now: it arms the backstop at the interval.
    func testFirstWriteAfterAQuietSpellArmsTheBackstopOnly() {
        var handoff = CommitPolicy.Handoff()
        XCTAssertEqual(policy.drain(.batched, waiting: 1, handoff: &handoff, now: at(0)), .after(seconds: 2))
        XCTAssertEqual(handoff.oldestWaiting, at(0))
        XCTAssertFalse(handoff.drainScheduled)
        XCTAssertEqual(policy.drain(.batched, waiting: 2, handoff: &handoff, now: at(0.5)), .none, "the backstop is armed once")
        XCTAssertEqual(handoff.oldestWaiting, at(0), "the wait is the oldest write's")
    }

    /// A write that finds the oldest waiting 0.9 s or more drains them all; the next write starts a new wait.
    func testAWriteFindingTheOldestWaitingNearlyHalfAnIntervalDrains() {
        var handoff = CommitPolicy.Handoff()
        _ = policy.drain(.batched, waiting: 1, handoff: &handoff, now: at(0))
        XCTAssertEqual(policy.drain(.batched, waiting: 2, handoff: &handoff, now: at(0.89)), .none)
        XCTAssertEqual(policy.drain(.batched, waiting: 3, handoff: &handoff, now: at(0.9)), .now)
        XCTAssertTrue(handoff.drainScheduled)
        XCTAssertEqual(policy.drain(.batched, waiting: 4, handoff: &handoff, now: at(0.91)), .none, "rides with the drain")
        handoff.drained()
        XCTAssertEqual(policy.drain(.batched, waiting: 1, handoff: &handoff, now: at(1.0)), .after(seconds: 2))
    }

    func testWritesWhileADrainIsQueuedRideWithIt() {
        var handoff = CommitPolicy.Handoff()
        XCTAssertEqual(policy.drain(.now, waiting: 1, handoff: &handoff, now: at(0)), .now)
        XCTAssertEqual(policy.drain(.batched, waiting: 2, handoff: &handoff, now: at(0.01)), .none)
        XCTAssertEqual(policy.drain(.now, waiting: 3, handoff: &handoff, now: at(0.02)), .none, "even a reset")
    }

    func testResetAndTheEndOfAWalkDrainAtOnce() {
        var handoff = CommitPolicy.Handoff()
        _ = policy.drain(.batched, waiting: 1, handoff: &handoff, now: at(0))
        XCTAssertEqual(StoreWrite.reset(since: at(0.1)).urgency, .now)
        XCTAssertEqual(StoreWrite.counter(.init(steps: 3, since: t0)).urgency, .now)
        XCTAssertEqual(StoreWrite.step(count: 1, time: t0, distanceMeters: 0.7).urgency, .batched)
        XCTAssertEqual(policy.drain(.now, waiting: 2, handoff: &handoff, now: at(0.1)), .now)
    }

    func testFlushWithNothingWaitingWakesNothing() {
        var handoff = CommitPolicy.Handoff()
        XCTAssertEqual(policy.drain(.now, waiting: 0, handoff: &handoff, now: at(0)), .none)
        XCTAssertEqual(handoff, CommitPolicy.Handoff())
    }

    /// Writes faster than real time (a replay at speed): 64 waiting drain at once, however young.
    func testManyWritesWaitingDrainAtOnce() {
        var handoff = CommitPolicy.Handoff()
        var drains: [CommitPolicy.Drain] = []
        for n in 1...64 { drains.append(policy.drain(.batched, waiting: n, handoff: &handoff, now: at(Double(n) * 1e-4))) }
        XCTAssertEqual(drains.first, .after(seconds: 2))
        XCTAssertEqual(Array(drains.dropFirst().dropLast()), Array(repeating: .none, count: 62))
        XCTAssertEqual(drains.last, .now)
    }

    /// What a run of batches costs the store: the wake-ups (drains at once and backstops that fired) and the
    /// longest any write waited for the drain that took it. The backstop is cleared by every drain, as the store
    /// does; a drain asked for takes the whole batch (StoreCore.drainAndCommit takes what comes during its
    /// commit).
    private func simulate(batchesEvery gap: Double, stepsPerBatch: Int = 2, seconds: Double)
        -> (wakeUps: Int, backstops: Int, longestWait: Double) {
        var handoff = CommitPolicy.Handoff()
        var waiting: [Double] = []
        var backstopDue: Double?
        var wakeUps = 0, backstops = 0
        var longestWait = 0.0
        func drainAll(at now: Double) {
            wakeUps += 1
            for w in waiting { longestWait = max(longestWait, now - w) }
            waiting.removeAll()
            handoff.drained()
            backstopDue = nil
        }
        var now = 0.0
        while now < seconds {
            if let due = backstopDue, due <= now {
                backstops += 1
                drainAll(at: due)
            }
            var drainAsked: Double?
            for step in 0..<stepsPerBatch {
                let t = now + Double(step) * 1e-5
                waiting.append(t)
                switch policy.drain(.batched, waiting: waiting.count, handoff: &handoff, now: at(t)) {
                case .none: break
                case .now: drainAsked = t
                case .after(let seconds): backstopDue = t + seconds
                }
            }
            if let drainAsked { drainAll(at: drainAsked) }
            now += gap
        }
        if let due = backstopDue {
            backstops += 1
            drainAll(at: due)
        }
        return (wakeUps, backstops, longestWait)
    }

    /// A steady walk from a buffered IIO source (a batch of two steps every 0.67 s) for two minutes: a drain
    /// every 2 s (0.5 wake-ups a second), from the writes, no backstop until the last, and no write waits
    /// longer than the interval. A policy of 0.5 s would drain once per batch or more (1.5-1.8 a second).
    func testSteadyWalkCostsTheStoreHalfAWakeUpASecondAndNoTimer() {
        let walk = simulate(batchesEvery: 2.0 / 3.0, seconds: 120)
        XCTAssertLessThanOrEqual(Double(walk.wakeUps) / 120, 0.51, "\(walk)")
        XCTAssertLessThanOrEqual(walk.backstops, 1, "only after the walk's last batch: \(walk)")
        XCTAssertLessThanOrEqual(walk.longestWait, policy.commitIntervalSeconds + 1e-9)
    }

    /// Other paces: batches every second (a slower refill, or a track point a second alone), four a second
    /// (a polled source), and a step every 0.2 s each its own batch: the writes drain it before the backstop,
    /// and nothing waits longer than the interval.
    func testOtherPacesWaitAtMostTheIntervalWithoutTheBackstop() {
        for (gap, most) in [(1.0, 0.51), (0.25, 0.82), (0.2, 1.01)] {
            let run = simulate(batchesEvery: gap, stepsPerBatch: 1, seconds: 120)
            XCTAssertLessThanOrEqual(Double(run.wakeUps) / 120, most, "every \(gap) s: \(run)")
            XCTAssertLessThanOrEqual(run.backstops, 1, "only after the last batch: every \(gap) s: \(run)")
            XCTAssertLessThanOrEqual(run.longestWait, policy.commitIntervalSeconds + 1e-9, "every \(gap) s")
        }
    }

    /// Writes far apart (a visit, a track point now and then): each waits for its backstop, the interval.
    func testLoneWritesWaitForTheBackstop() {
        let run = simulate(batchesEvery: 5, stepsPerBatch: 1, seconds: 60)
        XCTAssertEqual(run.backstops, run.wakeUps)
        XCTAssertEqual(run.longestWait, policy.commitIntervalSeconds, accuracy: 1e-9)
    }

    func testTimerIsFastOnlyWhileSomethingWaitsForTheDisk() {
        XCTAssertEqual(policy.pace(pendingEmpty: true, databaseOpen: true), .idle)
        XCTAssertEqual(policy.pace(pendingEmpty: false, databaseOpen: true), .fast)
        XCTAssertEqual(policy.pace(pendingEmpty: true, databaseOpen: false), .fast)
        XCTAssertEqual(policy.tickSeconds(.fast), 2)
        XCTAssertEqual(policy.tickSeconds(.idle), 30)
    }

    func testReopenAndPruneComeAtTheirIntervals() {
        XCTAssertFalse(policy.shouldReopen(lastAttempt: at(0), now: at(4.9)))
        XCTAssertTrue(policy.shouldReopen(lastAttempt: at(0), now: at(5)))
        XCTAssertTrue(policy.isPruneDue(lastPrune: .distantPast, now: at(0)))
        XCTAssertFalse(policy.isPruneDue(lastPrune: at(0), now: at(3599)))
        XCTAssertTrue(policy.isPruneDue(lastPrune: at(0), now: at(3600)))
    }

    /// The hold-back: a step counted after a reset but from a bout begun before it belongs to the new period;
    /// one older than the configured detector's hold-back (a clock set back) keeps its time.
    func testStepHeldBackAcrossAResetIsBinnedAtTheReset() {
        let configuration = StepStore.Configuration(directory: "/nonexistent", stepHoldBackSeconds: 10)
        XCTAssertEqual(configuration.binTime(of: at(-3), since: t0), t0)
        XCTAssertEqual(configuration.binTime(of: at(-10), since: t0), t0)
        XCTAssertEqual(configuration.binTime(of: at(-10.5), since: t0), at(-10.5))
        XCTAssertEqual(configuration.binTime(of: at(4), since: t0), at(4))
    }
}
