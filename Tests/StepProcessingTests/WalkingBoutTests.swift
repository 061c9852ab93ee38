import XCTest
@testable import StepProcessing

/// The bout gate on hand-made gait cycles, so every expected step time is exact.
final class WalkingBoutTests: XCTestCase {
    func feed(_ cycles: [GaitCycle], into bout: inout WalkingBout) -> [[Double]] {
        cycles.map { cycle in
            var steps: [Double] = []
            bout.advance(to: cycle.time)
            bout.take(cycle, steps: &steps)
            return steps
        }
    }

    func cycles(_ times: [Double], amplitude: Double = 5) -> [GaitCycle] {
        times.map { GaitCycle(time: $0, amplitude: amplitude) }
    }

    func testSixthRegularCycleConfirmsTheBoutWithAllSixTimes() {
        var bout = WalkingBout()
        let reports = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]), into: &bout)
        XCTAssertEqual(reports[0..<5].flatMap { $0 }, [])
        XCTAssertEqual(reports[5], [1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
        XCTAssertEqual(reports[6], [4.0])
        XCTAssertTrue(bout.isWalking)
        XCTAssertEqual(bout.stepPeriodSeconds, 0.5, accuracy: 1e-12)
    }

    func testAlternatingLeftRightIntervalsStillConfirm() {
        // A phone in one back pocket: steps alternate 0.40 s and 0.62 s, strides are steady.
        var bout = WalkingBout()
        let times = [0.0, 0.40, 1.02, 1.42, 2.04, 2.44]
        let reports = feed(cycles(times), into: &bout)
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

    func testAPauseEndsTheBoutAndTheNextWalkMustConfirmAgain() {
        var bout = WalkingBout()
        _ = feed(cycles([1.0, 1.5, 2.0, 2.5, 3.0, 3.5]), into: &bout)
        bout.advance(to: 5.1)
        XCTAssertFalse(bout.isWalking)
        let reports = feed(cycles([10.0, 10.5, 11.0, 11.5, 12.0, 12.5]), into: &bout)
        XCTAssertEqual(reports[0..<5].flatMap { $0 }, [])
        XCTAssertEqual(reports[5], [10.0, 10.5, 11.0, 11.5, 12.0, 12.5])
    }
}
