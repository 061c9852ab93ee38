import Foundation
@testable import StepService
import XCTest

/// When the store commits, decided by `CommitPolicy` from an injected clock: no store, no queue, no sleep.
final class CommitPolicyTests: XCTestCase {
    private let policy = CommitPolicy(commitIntervalSeconds: 0.5, reopenIntervalSeconds: 5)
    /// Near the reference date, so that the clock's Double keeps sub-microsecond differences exact enough.
    private let t0 = Date(timeIntervalSinceReferenceDate: 0)

    private func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    func testFirstWriteAfterAQuietSpellDrainsAtOnce() {
        var handoff = CommitPolicy.Handoff()
        XCTAssertEqual(policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0)), .now)
        XCTAssertTrue(handoff.drainScheduled)
        XCTAssertEqual(handoff.lastDrainRequest, at(0))
    }

    func testWritesWhileADrainIsQueuedRideWithIt() {
        var handoff = CommitPolicy.Handoff()
        _ = policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0))
        XCTAssertEqual(policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0.01)), .none)
        XCTAssertEqual(policy.drain(.now, waiting: true, handoff: &handoff, now: at(0.02)), .none, "even a reset")
    }

    /// The bound on `kill -9`: a write sooner than an interval after the last drain is drained at the interval's
    /// end at the latest, by one deferred drain however many writes come meanwhile.
    func testWriteWithinTheIntervalIsDeferredToItsEndOnce() {
        var handoff = CommitPolicy.Handoff()
        _ = policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0))
        handoff.drained()
        guard case .after(let seconds) = policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0.2)) else {
            return XCTFail("not deferred")
        }
        XCTAssertEqual(seconds, 0.3, accuracy: 1e-9)
        XCTAssertEqual(policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0.3)), .none)
        handoff.deferredDrainFired()
        handoff.drained()
        XCTAssertEqual(policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0.6)), .now)
    }

    func testResetAndTheEndOfAWalkDrainAtOnce() {
        var handoff = CommitPolicy.Handoff()
        _ = policy.drain(.batched, waiting: true, handoff: &handoff, now: at(0))
        handoff.drained()
        XCTAssertEqual(StoreWrite.reset(since: at(0.1)).urgency, .now)
        XCTAssertEqual(StoreWrite.counter(.init(steps: 3, since: t0)).urgency, .now)
        XCTAssertEqual(StoreWrite.step(count: 1, time: t0, distanceMeters: 0.7).urgency, .batched)
        XCTAssertEqual(policy.drain(.now, waiting: true, handoff: &handoff, now: at(0.1)), .now)
    }

    func testFlushWithNothingWaitingWakesNothing() {
        var handoff = CommitPolicy.Handoff()
        XCTAssertEqual(policy.drain(.now, waiting: false, handoff: &handoff, now: at(0)), .none)
        XCTAssertEqual(handoff, CommitPolicy.Handoff())
    }

    /// A steady walk, batches of steps every 0.7 s (an IIO buffered source) for a minute: one drain, so one
    /// wake-up and one commit, per batch, and never a deferred one (no timer).
    func testSteadyWalkCostsOneWakeUpPerCommitAndNoTimer() {
        var handoff = CommitPolicy.Handoff()
        var drains: [CommitPolicy.Drain] = []
        for batch in 0..<86 {
            let now = at(Double(batch) * 0.7)
            for step in 0..<2 {
                let drain = policy.drain(.batched, waiting: true, handoff: &handoff, now: now.addingTimeInterval(Double(step) * 1e-5))
                if drain != .none { drains.append(drain) }
            }
            handoff.drained()   // the store's queue takes the inbox
        }
        XCTAssertEqual(drains, Array(repeating: .now, count: 86))
    }

    /// Steps more often than the interval (every 0.2 s, each its own batch): immediate drains are an interval
    /// apart at least, and no step waits longer than an interval for the drain that takes it.
    func testFrequentStepsWaitAtMostOneInterval() {
        var handoff = CommitPolicy.Handoff()
        var immediate: [Double] = []
        var wakeUps: [Double] = []
        var deferredDue: Double?
        let steps = (0..<50).map { Double($0) * 0.2 }
        for now in steps {
            if let due = deferredDue, due <= now {
                handoff.deferredDrainFired()
                handoff.drained()
                wakeUps.append(due)
                deferredDue = nil
            }
            switch policy.drain(.batched, waiting: true, handoff: &handoff, now: at(now)) {
            case .none: break
            case .now: immediate.append(now); wakeUps.append(now); handoff.drained()
            case .after(let seconds): deferredDue = now + seconds
            }
        }
        for (a, b) in zip(immediate, immediate.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b - a, policy.commitIntervalSeconds - 1e-6)
        }
        for step in steps.dropLast(2) {
            let taken = wakeUps.first { $0 >= step - 1e-6 }
            XCTAssertLessThanOrEqual(try XCTUnwrap(taken) - step, policy.commitIntervalSeconds + 1e-6, "step at \(step)")
        }
        XCTAssertEqual(wakeUps.count, 33, "two wake-ups per 0.6 s: one at once, one deferred")
    }

    func testTimerIsFastOnlyWhileSomethingWaitsForTheDisk() {
        XCTAssertEqual(policy.pace(pendingEmpty: true, databaseOpen: true), .idle)
        XCTAssertEqual(policy.pace(pendingEmpty: false, databaseOpen: true), .fast)
        XCTAssertEqual(policy.pace(pendingEmpty: true, databaseOpen: false), .fast)
        XCTAssertEqual(policy.tickSeconds(.fast), 0.5)
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
