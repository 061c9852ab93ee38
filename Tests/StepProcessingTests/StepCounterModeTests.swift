import StepProcessing
import XCTest

/// The sensor-counter mode's decision (when capture may stop) and ledger (who counts which step).
final class StepCounterModeTests: XCTestCase {
    private let quiet = CaptureDemand(motionWatched: false, steps: 0)

    /// Refills every 2/3 s for `seconds`, the counter and the detector each adding steps at their rates.
    private func capture(_ mode: inout StepCounterMode, from start: Double, seconds: Double, counterPerSecond: Double,
                         detectorPerSecond: Double, motion: Bool = false) -> (StepCounterMode.Action, Double) {
        var t = start
        while t <= start + seconds {
            let elapsed = t - start
            let action = mode.captured(at: t, counter: 1000 + Int(elapsed * counterPerSecond),
                                       demand: CaptureDemand(motionWatched: motion, steps: 50 + Int(elapsed * detectorPerSecond)))
            if action == .countWithSensor { return (action, t) }
            t += 2.0 / 3
        }
        return (.capture, t)
    }

    func testStillForTheWindowStopsCaptureButNotBefore() {
        var mode = StepCounterMode()
        XCTAssertEqual(capture(&mode, from: 100, seconds: 8.5, counterPerSecond: 0, detectorPerSecond: 0).0, .capture)
        var fresh = StepCounterMode()
        let (action, at) = capture(&fresh, from: 100, seconds: 15, counterPerSecond: 0, detectorPerSecond: 0)
        XCTAssertEqual(action, .countWithSensor)
        XCTAssertEqual(at, 109, accuracy: 0.7, "after 90 % of the 10 s window")
        XCTAssertFalse(fresh.capturing)
        XCTAssertEqual(fresh.readInterval, fresh.settings.stillReadSeconds)
    }

    func testASteadyWalkWhereCounterAndDetectorAgreeStopsCapture() {
        var mode = StepCounterMode()
        let (action, _) = capture(&mode, from: 0, seconds: 20, counterPerSecond: 1.8, detectorPerSecond: 1.75)
        XCTAssertEqual(action, .countWithSensor)
        XCTAssertEqual(mode.readInterval, mode.settings.walkingReadSeconds)
        XCTAssertTrue(mode.reason.contains("walking steadily"), mode.reason)
    }

    /// A counter that takes arm motion for steps (or misses steps) disagrees with the detector: capture stays.
    func testACounterThatDisagreesWithTheDetectorNeverTakesOver() {
        var mode = StepCounterMode()
        XCTAssertEqual(capture(&mode, from: 0, seconds: 60, counterPerSecond: 1.8, detectorPerSecond: 0).0, .capture)
        XCTAssertEqual(capture(&mode, from: 61, seconds: 60, counterPerSecond: 1.8, detectorPerSecond: 1.3).0, .capture)
        XCTAssertEqual(capture(&mode, from: 122, seconds: 60, counterPerSecond: 0, detectorPerSecond: 1.5).0, .capture)
    }

    func testAFewStepsAreNeitherStillNorASteadyWalk() {
        var mode = StepCounterMode()
        XCTAssertEqual(capture(&mode, from: 0, seconds: 30, counterPerSecond: 0.5, detectorPerSecond: 0.5).0, .capture)
    }

    func testAMotionWatcherKeepsCaptureOnAndBringsItBack() {
        var mode = StepCounterMode()
        XCTAssertEqual(capture(&mode, from: 0, seconds: 30, counterPerSecond: 0, detectorPerSecond: 0, motion: true).0, .capture)
        XCTAssertEqual(capture(&mode, from: 31, seconds: 30, counterPerSecond: 0, detectorPerSecond: 0).0, .countWithSensor)
        XCTAssertEqual(mode.read(counter: 1000, motionWatched: false), .countWithSensor)
        XCTAssertEqual(mode.read(counter: 1000, motionWatched: true), .capture)
        XCTAssertTrue(mode.capturing)
        XCTAssertEqual(mode.reason, "a MOTION watcher")
    }

    /// Still, then the counter moves: a bout starts, and capture comes back for its start and cadence. Walking
    /// steadily, the counter moving is expected; when it stops, the pace slows, and the next move is a bout.
    func testTheCounterMovingAfterAStillStretchBringsCaptureBack() {
        var still = StepCounterMode()
        _ = capture(&still, from: 0, seconds: 15, counterPerSecond: 0, detectorPerSecond: 0)
        XCTAssertEqual(still.read(counter: 1000, motionWatched: false), .countWithSensor)
        XCTAssertEqual(still.read(counter: 1006, motionWatched: false), .capture)
        XCTAssertTrue(still.reason.contains("bout starts"), still.reason)

        var walking = StepCounterMode()
        let (_, at) = capture(&walking, from: 0, seconds: 20, counterPerSecond: 1.8, detectorPerSecond: 1.8)
        let counter = 1000 + Int((at - 0) * 1.8)
        XCTAssertEqual(walking.read(counter: counter + 4, motionWatched: false), .countWithSensor)
        XCTAssertEqual(walking.read(counter: counter + 8, motionWatched: false), .countWithSensor)
        XCTAssertEqual(walking.readInterval, walking.settings.walkingReadSeconds)
        XCTAssertEqual(walking.read(counter: counter + 8, motionWatched: false), .countWithSensor, "stopped")
        XCTAssertEqual(walking.readInterval, walking.settings.stillReadSeconds)
        XCTAssertEqual(walking.read(counter: counter + 9, motionWatched: false), .capture, "walks again")
    }

    func testACounterThatRestartsOrStepsResetAreJudgedAfresh() {
        var mode = StepCounterMode()
        XCTAssertEqual(mode.captured(at: 0, counter: 500, demand: quiet), .capture)
        XCTAssertEqual(mode.captured(at: 5, counter: 500, demand: quiet), .capture)
        XCTAssertEqual(mode.captured(at: 9.5, counter: 3, demand: quiet), .capture, "restarted: not still for 9.5 s")
        XCTAssertEqual(mode.captured(at: 15, counter: 3, demand: quiet), .capture)
        XCTAssertEqual(mode.captured(at: 19.5, counter: 3, demand: quiet), .countWithSensor)
    }

    // MARK: The ledger

    func testTheLedgerCountsTheDetectorUpToTheSwitchAndTheCounterAfterIt() {
        var ledger = StepCounterLedger()
        XCTAssertTrue(ledger.countsDetectorStep(at: 5))
        XCTAssertEqual(ledger.read(40, at: 10, countingAfter: .detector), [], "the detector counts: no counter steps")
        XCTAssertEqual(ledger.read(52, at: 20, countingAfter: .sensor), [], "steps up to the switch were the detector's")
        XCTAssertEqual(ledger.counting, .sensor)
        XCTAssertTrue(ledger.countsDetectorStep(at: 19.6), "reported late, made before the switch")
        XCTAssertFalse(ledger.countsDetectorStep(at: 20.3), "the counter counts it")
        XCTAssertEqual(ledger.read(56, at: 22, countingAfter: .sensor), [20.5, 21, 21.5, 22], "spread over the interval")
        XCTAssertEqual(ledger.read(56, at: 27, countingAfter: .sensor), [])
        XCTAssertEqual(ledger.read(58, at: 32, countingAfter: .detector), [29.5, 32])
        XCTAssertEqual(ledger.counting, .detector)
        XCTAssertFalse(ledger.countsDetectorStep(at: 31), "before capture came back: the counter's")
        XCTAssertTrue(ledger.countsDetectorStep(at: 32.5))
        XCTAssertEqual(ledger.read(70, at: 40, countingAfter: .detector), [], "the detector counts again")
    }

    func testTheLedgerTakesACounterThatRestartedOrJumpedForNoSteps() {
        var ledger = StepCounterLedger()
        _ = ledger.read(900, at: 0, countingAfter: .sensor)
        XCTAssertEqual(ledger.read(4, at: 5, countingAfter: .sensor), [], "a restart")
        XCTAssertEqual(ledger.read(6, at: 6, countingAfter: .sensor).count, 2, "counted from the restart")
        XCTAssertEqual(ledger.read(100_006, at: 11, countingAfter: .sensor), [], "no walker takes 100000 steps in 5 s")
        XCTAssertEqual(ledger.implausibleJumps, 1)
        XCTAssertEqual(ledger.read(100_016, at: 16, countingAfter: .sensor).count, 10)
        XCTAssertEqual(ledger.read(-1, at: 17, countingAfter: .detector), [], "an unreadable counter: no steps")
    }
}
