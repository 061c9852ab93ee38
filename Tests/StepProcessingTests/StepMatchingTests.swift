import XCTest
@testable import StepProcessing

final class StepMatchingTests: XCTestCase {
    func testIdenticalStepsMatchPerfectly() {
        let truth = [1.0, 1.5, 2.0, 2.5]
        let a = StepMatching.accuracy(trueTimes: truth, detectedTimes: truth)
        XCTAssertEqual(a, StepAccuracy(trueCount: 4, detectedCount: 4, matchedCount: 4, lagSeconds: 0))
        XCTAssertEqual(a.f1, 1)
        XCTAssertEqual(a.absolutePercentageError, 0)
    }

    func testConstantDelayIsSubtractedBeforeMatching() {
        // A filter that delays every step by 0.4 s (beyond the 0.25 s tolerance) still scores perfectly.
        let truth = [1.0, 2.0, 3.0, 4.0]
        let a = StepMatching.accuracy(trueTimes: truth, detectedTimes: truth.map { $0 + 0.4 })
        XCTAssertEqual(a.matchedCount, 4)
        XCTAssertEqual(a.lagSeconds, 0.4, accuracy: 1e-12)
    }

    func testMatchingIsOneToOne() {
        // Two detections near one true step: one pairs, the other is a false positive.
        let truth = [1.0, 2.0, 3.0]
        let a = StepMatching.accuracy(trueTimes: truth, detectedTimes: [1.0, 1.1, 2.0, 3.0])
        XCTAssertEqual(a.matchedCount, 3)
        XCTAssertEqual(a.detectedCount, 4)
        XCTAssertEqual(a.precision, 0.75)
        XCTAssertEqual(a.recall, 1)
        XCTAssertEqual(a.f1, 6.0 / 7.0, accuracy: 1e-12)
        XCTAssertEqual(a.absolutePercentageError, 100.0 / 3.0, accuracy: 1e-12)
    }

    func testStepsOutsideToleranceDoNotMatch() {
        // Median lag is 0 (two of three exact); the third is 0.3 s off, beyond ±0.25 s.
        let a = StepMatching.accuracy(trueTimes: [1, 2, 3], detectedTimes: [1, 2, 3.3])
        XCTAssertEqual(a.matchedCount, 2)
        XCTAssertEqual(a.f1, 4.0 / 6.0, accuracy: 1e-12)
        XCTAssertEqual(a.absolutePercentageError, 0)
    }

    func testMissedStepsLowerRecallOnly() {
        let a = StepMatching.accuracy(trueTimes: [1, 2, 3, 4], detectedTimes: [1, 3])
        XCTAssertEqual(a.matchedCount, 2)
        XCTAssertEqual(a.precision, 1)
        XCTAssertEqual(a.recall, 0.5)
        XCTAssertEqual(a.absolutePercentageError, 50)
    }

    func testEmptyListsAreHandled() {
        XCTAssertEqual(StepMatching.accuracy(trueTimes: [], detectedTimes: []).f1, 1)
        let none = StepMatching.accuracy(trueTimes: [1, 2], detectedTimes: [])
        XCTAssertEqual(none.f1, 0)
        XCTAssertEqual(none.absolutePercentageError, 100)
        XCTAssertEqual(StepMatching.accuracy(trueTimes: [], detectedTimes: [1]).f1, 0)
    }

    func testMedianLagUsesNearestTrueStep() {
        // Offsets to nearest: +0.1, −0.05, +0.2 → median +0.1.
        XCTAssertEqual(StepMatching.medianLag(trueTimes: [1, 2, 3], detectedTimes: [1.1, 1.95, 3.2]), 0.1, accuracy: 1e-12)
    }

    func testScoringInsideAWindowUsesTheWholeTraceLag() {
        // Steps every 0.5 s, detected 0.1 s late; a window of 2-4 s holds five true steps (2.0 ... 4.0). A stray
        // detection at 1.95 s (1.85 s less the lag, 0.15 s before the window) is within the margin and counted.
        let truth = (0..<12).map { Double($0) * 0.5 }
        let detected = truth.map { $0 + 0.1 } + [1.95]
        let inside = StepMatching.accuracy(trueTimes: truth, detectedTimes: detected, within: 2...4)
        XCTAssertEqual(inside.lagSeconds, 0.1, accuracy: 1e-9)
        XCTAssertEqual(inside.trueCount, 5)
        XCTAssertEqual(inside.detectedCount, 6)
        XCTAssertEqual(inside.matchedCount, 5)
    }
}

final class GroundTruthRepairTests: XCTestCase {
    func testSwitchBounceIsDropped() {
        // 1.27 is 0.27 s after 1.0: faster than any step, a second edge of the same footfall.
        XCTAssertEqual(GroundTruthRepair.repaired([0, 0.5, 1.0, 1.27, 1.5, 2.0, 2.5]), [0, 0.5, 1.0, 1.5, 2.0, 2.5])
    }

    func testMissedFootfallIsFilledAtTheMiddleOfTheGap() {
        // A steady 0.5 s walk with the event at 2.0 missing.
        let repaired = GroundTruthRepair.repaired([0, 0.5, 1.0, 1.5, 2.5, 3.0, 3.5, 4.0])
        XCTAssertEqual(repaired, [0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
    }

    func testAPauseIsNotFilled() {
        // Three step intervals of silence is a pause, not one missed event.
        XCTAssertEqual(GroundTruthRepair.repaired([0, 0.5, 1.0, 1.5, 3.0, 3.5, 4.0]), [0, 0.5, 1.0, 1.5, 3.0, 3.5, 4.0])
    }

    func testASwitchSilentForAStretchIsFilled() {
        // A 0.5 s walk of 30 steps in which one foot's switch stays silent for twelve steps (six of its own
        // footfalls): the local intervals double to 1.0 s, and each gap gets its missing footfall.
        let truth = (0..<30).map { Double($0) * 0.5 }
        let recorded = truth.enumerated().filter { !($0.offset >= 8 && $0.offset < 20 && $0.offset % 2 == 1) }.map(\.element)
        XCTAssertEqual(recorded.count, 24)
        XCTAssertEqual(GroundTruthRepair.repaired(recorded), truth)
    }
}
