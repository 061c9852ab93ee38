import XCTest
@testable import StepProcessing

/// Impossible samples are dropped before any filter, and a replay's clock survives jumps.
final class SampleSanityTests: XCTestCase {
    private func walk(seconds: Double, rateHz: Double = 100, from start: Double = 0) -> [Sample] {
        // 1.8 steps a second: a vertical bounce of 3 m/s^2 on gravity, as a phone in the hand sees.
        stride(from: 0, to: seconds, by: 1 / rateHz).map { t in
            Sample(time: start + t, x: 0.3, y: 0.2, z: 9.81 + 3 * sin(2 * .pi * 1.8 * t))
        }
    }

    func testPlausibilityRejectsNonFiniteAndBeyondFiftyGPerAxisOrInNorm() {
        let g = standardGravity
        XCTAssertTrue(SamplePlausibility.isPlausible(Sample(time: 0, x: 0, y: 0, z: 9.81)))
        XCTAssertTrue(SamplePlausibility.isPlausible(Sample(time: 0, x: 49 * g, y: 0, z: 0)))
        XCTAssertFalse(SamplePlausibility.isPlausible(Sample(time: 0, x: 51 * g, y: 0, z: 0)))
        // Each axis under 50 g, the norm over it.
        XCTAssertFalse(SamplePlausibility.isPlausible(Sample(time: 0, x: 30 * g, y: 30 * g, z: 30 * g)))
        for bad in [Double.nan, .infinity, -.infinity, 1e300, -1e308] {
            XCTAssertFalse(SamplePlausibility.isPlausible(Sample(time: 0, x: 0, y: bad, z: 9.81)), "\(bad)")
            XCTAssertFalse(SamplePlausibility.isPlausible(Sample(time: bad.isFinite ? .nan : bad, x: 0, y: 0, z: 9.81)))
        }
    }

    func testOneHugeSampleDoesNotStopCountingAndIsCounted() {
        let clean = walk(seconds: 30)
        var dirty = clean
        // Between two real samples, so the clean grid is unchanged: one 1e300, one NaN, a run of 1e308.
        dirty.insert(Sample(time: clean[500].time + 0.001, x: 1e300, y: 0, z: 0), at: 501)
        dirty.insert(Sample(time: clean[900].time + 0.001, x: .nan, y: 0, z: 9.8), at: 902)
        for i in 0..<20 { dirty.insert(Sample(time: clean[1500].time + 0.0001 * Double(i + 1), x: 1e308, y: 1e308, z: 1e308), at: 1503 + i) }
        func count(_ samples: [Sample]) -> (steps: [Double], pipeline: StepPipeline) {
            let pipeline = StepPipeline(detector: StepDetectorKind.default.make(sampleRateHz: 60))
            var steps: [Double] = []
            pipeline.process(samples) { steps.append($0) }
            return (steps, pipeline)
        }
        let (cleanSteps, _) = count(clean)
        let (dirtySteps, pipeline) = count(dirty)
        XCTAssertGreaterThan(cleanSteps.count, 40)
        XCTAssertEqual(dirtySteps, cleanSteps)
        XCTAssertEqual(pipeline.samplesRejected, 22)
        XCTAssertEqual(pipeline.samplesIn, dirty.count)
    }

    func testAllImpossibleSamplesLeaveThePipelineEmpty() {
        let pipeline = StepPipeline(detector: StepDetectorKind.default.make(sampleRateHz: 60))
        var steps = 0
        var uniform = 0
        let samples = (0..<500).map { Sample(time: Double($0) / 100, x: 1e308, y: 1e308, z: 1e308) }
        pipeline.process(samples, onUniformSample: { _ in uniform += 1 }, onStep: { _ in steps += 1 })
        XCTAssertEqual(steps, 0)
        XCTAssertEqual(uniform, 0)
        XCTAssertEqual(pipeline.samplesRejected, 500)
    }

    // MARK: ReplayClock

    func testReplayClockFollowsTheRecordingAtItsSpeed() {
        var clock = ReplayClock(speed: 2)
        XCTAssertEqual(clock.due(10, now: 1000).wall, 1000)
        XCTAssertEqual(clock.due(11, now: 5000).wall, 1000.5)
        XCTAssertEqual(clock.due(14, now: 5000).wall, 1002)
        XCTAssertEqual(clock.gaps, 0)
    }

    func testReplayClockTurnsJumpsIntoGapsWithoutWaiting() {
        var clock = ReplayClock(speed: 1)
        _ = clock.due(0, now: 100)
        XCTAssertEqual(clock.due(1, now: 0).wall, 101)
        // 1e15 s ahead: no deadline 31 million years away; due with the sample before, then on from there.
        let jump = clock.due(1e15, now: 0)
        XCTAssertEqual(jump.wall, 101)
        XCTAssertTrue(jump.afterGap)
        XCTAssertEqual(clock.due(1e15 + 2, now: 0).wall, 103)
        // Back in time: a gap too.
        let back = clock.due(5, now: 0)
        XCTAssertEqual(back.wall, 103)
        XCTAssertTrue(back.afterGap)
        XCTAssertEqual(clock.due(6, now: 0).wall, 104)
        // Not a number: due with the previous sample, the clock unchanged.
        XCTAssertEqual(clock.due(.nan, now: 0).wall, 104)
        XCTAssertEqual(clock.due(.infinity, now: 0).wall, 104)
        XCTAssertEqual(clock.due(7, now: 0).wall, 105)
        XCTAssertEqual(clock.gaps, 2)
    }

    func testReplayClockKeepsAPauseShorterThanAMinute() {
        var clock = ReplayClock(speed: 1)
        _ = clock.due(0, now: 0)
        let pause = clock.due(59, now: 0)
        XCTAssertEqual(pause.wall, 59)
        XCTAssertFalse(pause.afterGap)
        XCTAssertTrue(clock.due(59 + 61, now: 0).afterGap)
    }
}
