import XCTest
@testable import StepProcessing

/// The bout gate on hand-made gait cycles, so every expected step time is exact.
final class WalkingBoutTests: XCTestCase {
    func feed(_ cycles: [GaitCycle], into bout: inout WalkingBout) -> [[Double]] {
        cycles.map { cycle in
            var steps: [Double] = []
            bout.advance(to: cycle.time, steps: &steps)
            bout.take(cycle, steps: &steps)
            return steps
        }
    }

    func cycles(_ times: [Double], amplitude: Double = 5) -> [GaitCycle] {
        times.map { GaitCycle(time: $0, amplitude: amplitude) }
    }

    func testFourEvenCyclesConfirmAShortBoutWithAllFourTimes() {
        // A few steps between pauses (a desk to the door): even and of one size, they are walking.
        var bout = WalkingBout()
        let reports = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0]), into: &bout)
        XCTAssertEqual(reports[0..<3].flatMap { $0 }, [])
        XCTAssertEqual(reports[3], [1.0, 1.5, 2.0, 2.5])
        XCTAssertEqual(reports[4], [3.0])
        XCTAssertTrue(bout.isWalking)
        XCTAssertEqual(bout.stepPeriodSeconds, 0.5, accuracy: 1e-12)
    }

    func testARegularRunConfirmsOnlyOnceTheWalkingGateHasBeenOpenSinceItsThirdCycle() {
        // Regular cycles while the gate is closed are held, not counted, however even; the gate opens at 2.2 s,
        // after the run's third cycle (2.0 s), so the run slides on and confirms when the third of its last six
        // (2.5 s) comes after the opening: those six, and the one before them as the walk's push-off (one period
        // earlier, full size), as any confirmed run.
        var bout = WalkingBout()
        var reports: [[Double]] = []
        for cycle in cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]) {
            var steps: [Double] = []
            bout.gateOpenSince = cycle.time >= 2.2 ? 2.2 : .infinity
            bout.advance(to: cycle.time, steps: &steps)
            bout.take(cycle, steps: &steps)
            reports.append(steps)
        }
        XCTAssertEqual(reports[0..<6].flatMap { $0 }, [], "a closed gate confirms nothing, however even the run")
        XCTAssertEqual(reports[6], [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], "once the gate has been open since the third")
        XCTAssertEqual(reports[7], [4.5])
    }

    func testThePushOffBeforeAConfirmedRunIsCountedWithIt() {
        // Gait initiation: a push-off a third of the walk's size one period before four even steps. Too small
        // for the run, it is counted when the run confirms, with its own time, first.
        var bout = WalkingBout()
        var list = [GaitCycle(time: 0.5, amplitude: 1.5)]
        list += cycles([1.0, 1.5, 2.0, 2.5])
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[0..<4].flatMap { $0 }, [])
        XCTAssertEqual(reports[4], [0.5, 1.0, 1.5, 2.0, 2.5])
    }

    func testACycleOffTheRhythmBeforeARunIsNotAPushOff() {
        // A jolt half a period or two periods before the walk (handling as it starts), or a cycle a tenth of
        // the walk's size a period before, is not counted; the jolt breaks the run's regularity, and the real
        // first step it cost the run comes back as the push-off.
        for first in [GaitCycle(time: 0.75, amplitude: 4), GaitCycle(time: 0.0, amplitude: 4),
                      GaitCycle(time: 0.5, amplitude: 0.5)] {
            var bout = WalkingBout()
            let reports = feed([first] + cycles([1.0, 1.5, 2.0, 2.5, 3.0]), into: &bout)
            XCTAssertEqual(reports.flatMap { $0 }, [1.0, 1.5, 2.0, 2.5, 3.0], "\(first)")
        }
    }

    func testAWeightShiftSoonerThanAPeriodBeforeTheRunIsNotAPushOff() {
        // Before the first step the body shifts its weight onto the stance leg: a small cycle 0.8 of a period
        // before the run. The first step is not quicker than the walk, so this is not the push-off.
        var bout = WalkingBout()
        let list = [GaitCycle(time: 0.6, amplitude: 1.2)] + cycles([1.0, 1.5, 2.0, 2.5])
        XCTAssertEqual(feed(list, into: &bout).flatMap { $0 }, [1.0, 1.5, 2.0, 2.5])
    }

    func testUnevenCyclesNeedSixToConfirm() {
        // Steps of 0.5 and 0.6 s: within a stride's tolerance, not even enough for a short bout.
        var bout = WalkingBout()
        let times = [1.0, 1.5, 2.1, 2.6, 3.2, 3.7, 4.3]
        let reports = feed(cycles(times), into: &bout)
        XCTAssertEqual(reports[0..<5].flatMap { $0 }, [])
        XCTAssertEqual(reports[5], Array(times.prefix(6)))
        XCTAssertEqual(reports[6], [4.3])
    }

    func testFourCyclesOfDifferentSizesAreNotAShortBout() {
        // Putting a phone in a pocket: four jolts at a walking rhythm, but each smaller than the one before.
        var bout = WalkingBout()
        let list = zip([1.0, 1.5, 2.0, 2.5], [8.0, 5.0, 3.0, 2.0]).map { GaitCycle(time: $0, amplitude: $1) }
        XCTAssertEqual(feed(list, into: &bout).flatMap { $0 }, [])
        XCTAssertFalse(bout.isWalking)
    }

    func testAOneSidedCarriersAlternatingSizesConfirmAShortBout() {
        // A phone in one front pocket sees its own leg's footfall 2.5 times the other's; each foot's are alike.
        var bout = WalkingBout()
        let list = zip([1.0, 1.5, 2.0, 2.5], [10.0, 4.0, 9.0, 4.5]).map { GaitCycle(time: $0, amplitude: $1) }
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[3], [1.0, 1.5, 2.0, 2.5])
        XCTAssertTrue(bout.isWalking)
    }

    func testSizesThatDifferWithinOneFootAreNotAShortBout() {
        // The same overall spread, but one foot's cycles differ 2.5-fold: not a steady gait.
        var bout = WalkingBout()
        let list = zip([1.0, 1.5, 2.0, 2.5], [10.0, 9.0, 4.0, 9.5]).map { GaitCycle(time: $0, amplitude: $1) }
        XCTAssertEqual(feed(list, into: &bout).flatMap { $0 }, [])
        XCTAssertFalse(bout.isWalking)
    }

    func testAOneSidedGaitFiveToOneBetweenTheFeetConfirmsASixStepRun() {
        // Uneven intervals (no short bout) and sizes alternating 10 and 2: the feet differ fivefold, each foot
        // is steady, so the six cycles are a run; the tenfold jump of the test below is not.
        var bout = WalkingBout()
        let times = [1.0, 1.5, 2.1, 2.6, 3.2, 3.7]
        let list = times.enumerated().map { GaitCycle(time: $1, amplitude: $0 % 2 == 0 ? 10 : 2) }
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[5], times)
    }

    func testAlternatingLeftRightIntervalsStillConfirm() {
        // A phone in one back pocket: steps alternate 0.40 s and 0.62 s, strides are steady.
        var bout = WalkingBout()
        let times = [0.0, 0.40, 1.02, 1.42, 2.04, 2.44]
        let reports = feed(cycles(times), into: &bout)
        XCTAssertEqual(reports[0..<5].flatMap { $0 }, [])
        XCTAssertEqual(reports[5], times)
    }

    func testIrregularCyclesNeverConfirm() {
        // Handling: intervals 0.3, 0.9, 0.35, 1.2, 0.4, 0.8, ... no steady stride.
        var bout = WalkingBout()
        var t = 0.0
        var times: [Double] = []
        for interval in [0.3, 0.9, 0.35, 1.2, 0.4, 0.8, 0.3, 1.1, 0.45, 0.9, 0.3, 1.0] { t += interval; times.append(t) }
        XCTAssertEqual(feed(cycles(times), into: &bout).flatMap { $0 }, [])
        XCTAssertFalse(bout.isWalking)
    }

    func testCyclesOfVeryDifferentSizeNeverConfirm() {
        // A regular rhythm whose size jumps tenfold every other cycle is not a gait.
        var bout = WalkingBout()
        let list = (0..<12).map { GaitCycle(time: Double($0) * 0.5, amplitude: $0 % 2 == 0 ? 0.7 : 7) }
        XCTAssertEqual(feed(list, into: &bout).flatMap { $0 }, [])
    }

    func testMissedFootfallIsCountedAtTheMiddleOfTheGap() {
        var bout = WalkingBout()
        let reports = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 5.5]), into: &bout)
        XCTAssertEqual(reports[7], [4.5, 5.0])
        XCTAssertEqual(reports[8], [5.5])
    }

    func testFaintOrTooEarlyCyclesInsideABoutAreNotSteps() {
        var bout = WalkingBout()
        var list = cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
        list.append(GaitCycle(time: 3.7, amplitude: 5))    // 0.2 s after a step: a wobble
        list.append(GaitCycle(time: 4.0, amplitude: 0.5))  // a tenth of the walk's size: not a footfall
        list.append(GaitCycle(time: 4.5, amplitude: 5))
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[6], [])
        XCTAssertEqual(reports[7], [])
        XCTAssertEqual(reports[8], [4.0, 4.5], "the faint 4.0 s cycle is replaced by the missed-footfall rule at 4.0 s")
    }

    func testAPauseEndsTheBoutCountsTheClosingStepAndTheNextWalkMustConfirmAgain() {
        var bout = WalkingBout()
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5]), into: &bout)
        var closing: [Double] = []
        bout.advance(to: 4.9, steps: &closing)
        XCTAssertTrue(bout.isWalking)
        XCTAssertEqual(closing, [])
        bout.advance(to: 5.1, steps: &closing)
        XCTAssertFalse(bout.isWalking)
        XCTAssertEqual(closing, [4.0], "the step that brings the feet together, one period after the last")
        let reports = feed(cycles([10.0, 10.5, 11.0, 11.5, 12.0]), into: &bout)
        XCTAssertEqual(reports[0..<3].flatMap { $0 }, [])
        XCTAssertEqual(reports[3], [10.0, 10.5, 11.0, 11.5])
    }

    func testAPauseAfterThePostureTurnedCountsNoClosingStep() {
        // Sitting down: the device's gravity turned during the pause, so the walk ended with the sit, and the
        // footfall one period after the last step would fall on the chair. The next bout's pause counts its own.
        var bout = WalkingBout()
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5]), into: &bout)
        var closing: [Double] = []
        bout.postureChanged = true
        bout.advance(to: 5.1, steps: &closing)
        XCTAssertFalse(bout.isWalking)
        XCTAssertEqual(closing, [])
        XCTAssertFalse(bout.postureChanged, "a bout's end clears it")
        _ = feed(cycles([10.0, 10.5, 11.0, 11.5, 12.0]), into: &bout)
        bout.advance(to: 13.6, steps: &closing)
        XCTAssertEqual(closing, [12.5])
    }

    func testSecondCrestOfOneFootfallIsNotAStep() {
        // A loose carrier in a 0.53 s gait: every other footfall shows a second crest 0.27 s after it.
        var bout = WalkingBout()
        var list: [GaitCycle] = []
        for k in 0..<20 {
            let t = 1.0 + 0.53 * Double(k)
            list.append(GaitCycle(time: t, amplitude: 5))
            if k >= 6 && k % 2 == 0 { list.append(GaitCycle(time: t + 0.27, amplitude: 4)) }
        }
        let steps = feed(list, into: &bout).flatMap { $0 }
        XCTAssertEqual(steps.count, 20)
        XCTAssertEqual(steps, (0..<20).map { 1.0 + 0.53 * Double($0) })
    }

    func testSmallCyclesOnTheRhythmAreTurnSteps() {
        // Into a turn the steps shrink to a quarter of the walk's size but keep the rhythm, or slow down; an
        // equally small cycle sooner than a period after a step (0.65 of one) is a sway, not a step.
        var bout = WalkingBout()
        var list = cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
        list += cycles([4.55, 5.1, 5.75], amplitude: 1.2)
        list += cycles([6.1], amplitude: 1.2)
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[7], [4.55])
        XCTAssertEqual(reports[8], [5.1])
        XCTAssertEqual(reports[9], [5.75])
        XCTAssertEqual(reports[10], [], "0.35 s after a step in a 0.54 s rhythm, and small: a wobble")
    }

    func testOnceTheDeviceHasTiltedASmallCycleIsNoTurnStep() {
        // A body turning on its feet does not tilt what it carries; a sit or a hand handling the phone does. Once
        // the detector says the device has turned from the bout's posture, a small cycle on the rhythm is not a
        // step, while a full-sized one may be: it waits for the next step.
        var walking = WalkingBout()
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]), into: &walking)
        for (tilted, amplitude, expected, waiting) in [(false, 1.2, [4.55], nil), (true, 1.2, [], nil), (true, 5.0, [], 4.55)] {
            var bout = walking
            bout.postureChanged = tilted
            var steps: [Double] = []
            bout.take(GaitCycle(time: 4.55, amplitude: amplitude), steps: &steps)
            XCTAssertEqual(steps, expected, "tilted \(tilted), size \(amplitude)")
            XCTAssertEqual(bout.waitingStepTime, waiting, "tilted \(tilted), size \(amplitude)")
        }
    }

    /// A bout walking at 0.5 s a step, its last step at 4.0 s, that takes a full-sized cycle at 4.5 s while the
    /// device has turned from its posture; returns what that reported (nothing: the cycle waits).
    func boutWithATurnedCycle(configuration: WalkingBout.Configuration = .init()) -> WalkingBout {
        var bout = WalkingBout(configuration: configuration)
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]), into: &bout)
        var steps: [Double] = []
        bout.postureChanged = true
        bout.take(GaitCycle(time: 4.5, amplitude: 5), steps: &steps)
        XCTAssertEqual(steps, [])
        return bout
    }

    func testACycleWhileTurnedCountsWithTheNextStep() {
        // A phone raised to read it while walking on: the next footfall shows the walk went on, whatever the
        // posture, and both count, in time order.
        var bout = boutWithATurnedCycle()
        var steps: [Double] = []
        bout.advance(to: 4.95, steps: &steps)
        XCTAssertEqual(steps, [])
        bout.take(GaitCycle(time: 5.0, amplitude: 5), steps: &steps)
        XCTAssertEqual(steps, [4.5], "the next cycle, still turned, waits in its turn")
        bout.postureChanged = false
        bout.take(GaitCycle(time: 5.5, amplitude: 5), steps: &steps)
        XCTAssertEqual(steps, [4.5, 5.0, 5.5])
        XCTAssertNil(bout.waitingStepTime)
    }

    func testASmallCycleOnTheRhythmShowsTheWalkWentOn() {
        // The wrist still turned, the next footfall shows only a turn step's size (a quarter of the walk's) one
        // period on: too small to count while turned, but the walk went on, so the waiting cycle counts. A cycle
        // of that size off the rhythm (a wobble 0.3 s on) does not show it.
        var bout = boutWithATurnedCycle()
        var steps: [Double] = []
        bout.take(GaitCycle(time: 4.8, amplitude: 1.2), steps: &steps)
        XCTAssertEqual(steps, [])
        XCTAssertEqual(bout.waitingStepTime, 4.5)
        bout.take(GaitCycle(time: 5.0, amplitude: 1.2), steps: &steps)
        XCTAssertEqual(steps, [4.5])
        XCTAssertNil(bout.waitingStepTime)
    }

    func testACycleWhileTurnedWithNoStepAfterItIsTheSitAndIsDropped() {
        // Sitting down: no footfall follows and the posture stays turned, so at the end of the wait (0.95 s) the
        // cycle is dropped; the pause then ends the bout without a closing step.
        var bout = boutWithATurnedCycle()
        var steps: [Double] = []
        bout.advance(to: 5.44, steps: &steps)
        XCTAssertEqual(bout.waitingStepTime, 4.5)
        bout.advance(to: 5.45, steps: &steps)
        XCTAssertNil(bout.waitingStepTime)
        bout.advance(to: 6.1, steps: &steps)
        XCTAssertFalse(bout.isWalking)
        XCTAssertEqual(steps, [])
    }

    func testACycleWhileTurnedCountsWhenThePostureComesBack() {
        // A wrist turned for a moment at the walk's last step (a glance at the watch): upright again by the end of
        // the wait, the cycle was a step, and the pause after it counts the closing step.
        var bout = boutWithATurnedCycle()
        var steps: [Double] = []
        bout.postureChanged = false
        bout.advance(to: 5.45, steps: &steps)
        XCTAssertEqual(steps, [4.5])
        bout.advance(to: 6.1, steps: &steps)
        XCTAssertEqual(steps, [4.5, 5.0])
    }

    func testABoutThatTurnsIntoSomethingElseSettlesItsWaitingCycle() {
        // The walking gate has stayed closed and the bout is abandoned while a cycle waits: it counts if the
        // posture is back to the walk's, as at the end of its wait, and not if the device is still turned.
        for (turned, expected) in [(true, [Double]()), (false, [4.5])] {
            var bout = boutWithATurnedCycle()
            var steps: [Double] = []
            bout.postureChanged = turned
            bout.abandon(steps: &steps)
            XCTAssertEqual(steps, expected, "turned \(turned)")
            XCTAssertFalse(bout.isWalking)
            XCTAssertNil(bout.waitingStepTime)
        }
    }

    func testWithoutAWaitACycleWhileTurnedCountsAtOnce() {
        var configuration = WalkingBout.Configuration()
        configuration.turnedStepWaitSeconds = 0
        var bout = WalkingBout(configuration: configuration)
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]), into: &bout)
        var steps: [Double] = []
        bout.postureChanged = true
        bout.take(GaitCycle(time: 4.5, amplitude: 5), steps: &steps)
        XCTAssertEqual(steps, [4.5])
    }

    func testALongIntervalBetweenTwoTurnStepsIsOnePivotStep() {
        // Two turn-sized cycles two periods apart: one slow pivot step, not a footfall missed between them
        // (between two full-sized steps the same interval is a missed footfall: see above).
        var bout = WalkingBout()
        var list = cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
        list += cycles([4.55, 5.6], amplitude: 1.2)
        let reports = feed(list, into: &bout)
        XCTAssertEqual(reports[7], [4.55])
        XCTAssertEqual(reports[8], [5.6])
    }

    func testAStairDescentAtTwiceTheWalksRhythmCountsEveryFootfall() {
        // Walking at 0.55 s a step, then down a stairway at 0.28 s (3.6 steps a second), then walking again. The
        // first quick cycle looks like a second crest of its footfall and is not counted; once four full-sized
        // cycles come evenly at the quick rhythm the bout follows it, and back on the level the first 0.55 s
        // interval returns it to the walk's rhythm without counting a footfall missed in between.
        var bout = WalkingBout()
        let walk = (0..<9).map { 1.0 + 0.55 * Double($0) }
        let stairs = (1..<9).map { walk[8] + 0.28 * Double($0) }
        let level = (1..<4).map { stairs[7] + 0.55 * Double($0) }
        let steps = feed(cycles(walk + stairs + level), into: &bout).flatMap { $0 }
        XCTAssertEqual(steps, walk + stairs[1...] + level)
        XCTAssertFalse(bout.isFastRhythm)
        XCTAssertEqual(bout.stepPeriodSeconds, 0.55, accuracy: 1e-9)
    }

    func testABounceTooSmallForAFootfallDoesNotTakeTheQuickRhythm() {
        // A hand-held phone bounces evenly between the footfalls, at a third of their size: no stair descent.
        var bout = WalkingBout()
        var list: [GaitCycle] = []
        for k in 0..<16 {
            let t = 1.0 + 0.55 * Double(k)
            list.append(GaitCycle(time: t, amplitude: 5))
            if k >= 7 { list.append(GaitCycle(time: t + 0.275, amplitude: 1.6)) }
        }
        let steps = feed(list, into: &bout).flatMap { $0 }
        XCTAssertEqual(steps, (0..<16).map { 1.0 + 0.55 * Double($0) })
        XCTAssertFalse(bout.isFastRhythm)
    }
}
