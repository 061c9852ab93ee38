import XCTest
@testable import StepProcessing

/// The figures of `stepd bench`'s tables: walking bouts from the truth, the walking recall, the group summaries.
final class BenchScoresTests: XCTestCase {
    /// Steps every half second from `start`, `count` of them.
    private func walk(from start: Double, steps count: Int, interval: Double = 0.5) -> [Double] {
        (0..<count).map { start + Double($0) * interval }
    }

    func testBoutsAreRunsOfTenOrMoreStepsWithoutALongPause() {
        // 12 steps, a 3 s pause, 5 steps (too few), a 3 s pause, 10 steps.
        let first = walk(from: 0, steps: 12)
        let short = walk(from: 8.5, steps: 5)
        let last = walk(from: 13.5, steps: 10)
        let bouts = WalkingRecall.bouts(trueTimes: last + short + first)
        XCTAssertEqual(bouts, [0...5.5, 13.5...18])
    }

    func testAPauseOfTwoSecondsDoesNotEndABout() {
        let truth = walk(from: 0, steps: 6) + walk(from: 4.5, steps: 6)
        XCTAssertEqual(WalkingRecall.bouts(trueTimes: truth), [0...7])
    }

    func testPerStepRecallCountsTheTrueStepsInsideBoutsThatPair() {
        let truth = walk(from: 0, steps: 20)
        // The gate held the first six steps back and never counted them; one step outside the bout is ignored.
        let detected = Array(truth.dropFirst(6)) + [30]
        let recall = WalkingRecall.perStep(trueTimes: truth + [30], detectedTimes: detected, bouts: WalkingRecall.bouts(trueTimes: truth))
        XCTAssertEqual(recall, WalkingRecall(unit: .steps, kept: 14, total: 20))
        XCTAssertEqual(recall.percent, 70, accuracy: 1e-9)
    }

    func testPerSecondRecallCoversEachRunFromAStepBeforeItsFirstToHalfAStepAfterItsLast() {
        // A 20 s walk; steps every 0.5 s from 2 s to 8 s, then a drop, then from 12 s to 19.5 s.
        let detected = walk(from: 2, steps: 13) + walk(from: 12, steps: 16)
        let recall = WalkingRecall.perSecond(detectedTimes: detected, walk: 0...20)
        // [1.5, 8.25] and [11.5, 19.75]: 6.75 + 8.25 s of 20.
        XCTAssertEqual(recall.unit, .seconds)
        XCTAssertEqual(recall.kept, 15, accuracy: 1e-9)
        XCTAssertEqual(recall.total, 20)
        XCTAssertEqual(recall.percent, 75, accuracy: 1e-9)
        // A run that starts before the walk and ends after it is clipped to it.
        XCTAssertEqual(WalkingRecall.perSecond(detectedTimes: walk(from: -3, steps: 30), walk: 0...10).percent, 100, accuracy: 1e-9)
    }

    func testALoneStepCoversNothingAndNoStepsMeanNoRecall() {
        XCTAssertEqual(WalkingRecall.perSecond(detectedTimes: [5], walk: 0...10).kept, 0)
        XCTAssertEqual(WalkingRecall.perSecond(detectedTimes: [], walk: 0...10).percent, 0)
        XCTAssertEqual(WalkingRecall(unit: .steps, kept: 0, total: 0).percent, 100, "nothing to let through")
    }

    func testTheGateIsChargedOnlyWithTheStepsTheDetectorWithoutItFound() {
        let truth = walk(from: 0, steps: 20)
        // Without the gate the cycle finder misses steps 10 and 11; with it, the first six are lost too.
        let ungated = truth.enumerated().filter { ![10, 11].contains($0.offset) }.map(\.element)
        let gated = Array(ungated.dropFirst(6))
        let bouts = WalkingRecall.bouts(trueTimes: truth)
        XCTAssertEqual(WalkingRecall.gateShare(trueTimes: truth, gatedTimes: gated, ungatedTimes: ungated, bouts: bouts),
                       WalkingRecall(unit: .steps, kept: 12, total: 18))
        XCTAssertEqual(WalkingRecall.perStep(trueTimes: truth, detectedTimes: gated, bouts: bouts).kept, 12, "end to end: 12 of 20")
        // Per second: without the gate steps cover [1.5, 10.25]; with it from 4.5 s on.
        let seconds = WalkingRecall.gateShare(gatedTimes: walk(from: 5, steps: 11), ungatedTimes: walk(from: 2, steps: 17), walk: 0...20)
        XCTAssertEqual(seconds.unit, .seconds)
        XCTAssertEqual(seconds.total, 8.75, accuracy: 1e-9)
        XCTAssertEqual(seconds.kept, 5.75, accuracy: 1e-9)
    }

    func testRecallIsPooledOnlyOverOneUnit() {
        let a = WalkingRecall(unit: .steps, kept: 9, total: 10), b = WalkingRecall(unit: .steps, kept: 90, total: 90)
        XCTAssertEqual(WalkingRecall.pooled([a, b]), WalkingRecall(unit: .steps, kept: 99, total: 100))
        XCTAssertNil(WalkingRecall.pooled([a, WalkingRecall(unit: .seconds, kept: 1, total: 1)]))
        XCTAssertNil(WalkingRecall.pooled([]))
    }

    private func score(_ trace: String, person: String = "p1", placement: String = "hand", truth: TraceScore.Truth = .instants,
                       true trueCount: Int, detected: Int, matched: Int? = nil, recall: WalkingRecall? = nil) -> TraceScore {
        var score = TraceScore(set: "set", trace: trace, placement: placement, person: person, detector: "peak", truth: truth)
        score.trueCount = trueCount
        score.detectedCount = detected
        score.matchedCount = matched
        score.walkingRecall = recall
        return score
    }

    func testSummaryGivesMeanAndWorstErrorF1AndPooledRecall() {
        let scores = [
            score("a", true: 100, detected: 98, matched: 97, recall: WalkingRecall(unit: .steps, kept: 97, total: 100)),
            score("b", true: 200, detected: 210, matched: 199, recall: WalkingRecall(unit: .steps, kept: 199, total: 200)),
        ]
        let summary = ScoreSummary(scores)
        XCTAssertEqual(summary.traces, 2)
        XCTAssertEqual(summary.trueCount, 300)
        XCTAssertEqual(summary.detectedCount, 308)
        XCTAssertEqual(summary.meanErrorPercent!, 3.5, accuracy: 1e-9, "(2 % + 5 %) / 2")
        XCTAssertEqual(summary.worstErrorPercent!, 5, accuracy: 1e-9)
        XCTAssertEqual(summary.worstErrorTrace, "b")
        XCTAssertEqual(summary.meanF1!, (194.0 / 198 + 398.0 / 410) / 2, accuracy: 1e-9)
        XCTAssertEqual(summary.minimumF1!, 398.0 / 410, accuracy: 1e-9)
        XCTAssertEqual(summary.walkingRecall, WalkingRecall(unit: .steps, kept: 296, total: 300))
        XCTAssertEqual(summary.lowestRecallPercent!, 97, accuracy: 1e-9)
        XCTAssertEqual(summary.lowestRecallTrace, "a")
        XCTAssertEqual(summary.totalErrorPercent, 8.0 / 3, accuracy: 1e-9)
    }

    func testACountTruthHasAnErrorButNoF1() {
        var cambridge = score("p01-1-hand", truth: .count, true: 70, detected: 77)
        cambridge.detectedInWalk = 70
        let summary = ScoreSummary([cambridge])
        XCTAssertEqual(cambridge.errorPercent!, 10, accuracy: 1e-9)
        XCTAssertEqual(cambridge.walkErrorPercent!, 0, accuracy: 1e-9)
        XCTAssertEqual(cambridge.walkCountRecallPercent!, 100, accuracy: 1e-9)
        cambridge.detectedInWalk = 63
        XCTAssertEqual(cambridge.walkCountRecallPercent!, 90, accuracy: 1e-9, "7 of 70 steps not let through")
        cambridge.detectedInWalk = 70
        XCTAssertNil(cambridge.f1)
        XCTAssertNil(summary.meanF1)
        XCTAssertEqual(summary.meanErrorPercent!, 10, accuracy: 1e-9)
    }

    func testLabelledRunsCountWalksWithoutStepsAndStepsPerActivity() {
        var silent = score("s01_01-sp", truth: .labels, true: 0, detected: 1)
        silent.activitySteps = ["walking": 0, "seated": 1]
        silent.activitySeconds = ["walking": 4, "seated": 6]
        var walked = score("s01_02-sp", truth: .labels, true: 0, detected: 8)
        walked.activitySteps = ["walking": 8, "seated": 0]
        walked.activitySeconds = ["walking": 4, "seated": 5]
        XCTAssertTrue(silent.isWalkWithoutSteps)
        XCTAssertFalse(walked.isWalkWithoutSteps)
        XCTAssertNil(silent.errorPercent, "no step truth, no error")
        let summary = ScoreSummary([silent, walked])
        XCTAssertEqual(summary.walksWithoutSteps, 1)
        XCTAssertEqual(summary.activitySteps, ["walking": 8, "seated": 1])
        XCTAssertEqual(summary.walkingCadenceStepsPerMinute!, 60, accuracy: 1e-9, "8 steps in 8 s of walking")
        XCTAssertNil(summary.meanErrorPercent)
        XCTAssertEqual(summary.trueCount, 0)
    }

    func testGroupsComeInNaturalOrder() {
        let scores = ["p10", "p2", "p1", "s02", "p2"].map { score("t-\($0)", person: $0, true: 10, detected: 10) }
        let groups = ScoreSummary.grouped(scores, by: \.person)
        XCTAssertEqual(groups.map(\.key), ["p1", "p2", "p10", "s02"])
        XCTAssertEqual(groups[1].summary.traces, 2)
        XCTAssertTrue(ScoreSummary.naturalOrder("s9", "s10"))
        XCTAssertFalse(ScoreSummary.naturalOrder("s10", "s9"))
        XCTAssertTrue(ScoreSummary.naturalOrder("hand", "hand typing"))
    }
}
