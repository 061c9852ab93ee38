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

    /// One row whose time goes back (30 s here) is a glitch: due with the row before, and the rows after it keep
    /// their place on the clock. Before, the clock restarted at the glitch and every later row was due 30 s late.
    func testReplayClockKeepsTheRestOfTheFileInPlaceAfterOneBackwardsRow() {
        var clock = ReplayClock(speed: 1)
        for i in 0...100 { _ = clock.due(Double(i) / 100, now: 1000) }
        let glitch = clock.due(1 - 30, now: 0)
        XCTAssertEqual(glitch.wall, 1001, accuracy: 1e-9)
        for i in 101...200 {
            XCTAssertEqual(clock.due(Double(i) / 100, now: 0).wall, 1000 + Double(i) / 100, accuracy: 1e-9, "row at \(i)")
        }
    }

    /// The played time, which the pipeline and the engine see, goes on without the recording's jumps: a day
    /// forward and then an hour back each cost a gap of `gapSeconds`, so a step is never stamped a day away.
    func testReplayClockPlaysADayForwardThenAnHourBackWithoutAJump() {
        var clock = ReplayClock(speed: 1, gapSeconds: 1)
        var times = (0..<1000).map { Double($0) / 100 }
        times += (1000..<2000).map { 86_400 + Double($0) / 100 }
        times += (2000..<3000).map { 86_400 - 3_600 + Double($0) / 100 }
        var played: [Double] = []
        for t in times { played.append(clock.due(t, now: 0).played) }
        XCTAssertEqual(played[999], 9.99, accuracy: 1e-9)
        XCTAssertEqual(played[1000], 10.99, accuracy: 1e-9, "a gap of a second")
        // The first row an hour back is played with the row before (a glitch, until the next one confirms it).
        XCTAssertEqual(played[2000], played[1999], accuracy: 1e-9)
        XCTAssertEqual(played[2001], played[1999] + 1.01, accuracy: 1e-9, "the clock restarted at the row before")
        XCTAssertEqual(played.last!, 31.97, accuracy: 1e-9, "30 s of rows and two gaps of a second")
        for i in 1..<played.count { XCTAssertGreaterThanOrEqual(played[i], played[i - 1], "played time goes back at \(i)") }
        XCTAssertEqual(clock.gaps, 2)
        XCTAssertEqual(clock.glitches, 1)
    }

    /// A single row out of order is played at the time of the row before, and the played time of the rest is
    /// the recording's own.
    func testReplayClockPlaysAGlitchRowWithTheOneBefore() {
        var clock = ReplayClock(speed: 4)
        XCTAssertEqual(clock.due(50, now: 0).played, 50)
        XCTAssertEqual(clock.due(51, now: 0).played, 51)
        let glitch = clock.due(-7, now: 0)
        XCTAssertEqual(glitch.played, 51)
        XCTAssertTrue(glitch.afterGap)
        XCTAssertEqual(clock.due(52, now: 0).played, 52)
        XCTAssertEqual(clock.due(52, now: 0).wall, 0.5)
        XCTAssertEqual(clock.gaps, 0)
        XCTAssertEqual(clock.glitches, 1)
    }
}
