import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

/// The default detector on synthetic signals whose step count is known exactly.
final class PeakStepDetectorTests: XCTestCase {
    let rateHz = 60.0

    /// Gravity on z plus one bump per footfall, as a phone in a hand sees walking: a push at heel strike, a
    /// smaller sway between. Footfalls (crests) at `start + (k + 0.5) / cadenceHz`, k = 0 ..< seconds × cadence;
    /// the motion fades in over the first half step and out over the last, as a walk starts and stops.
    func walkingSamples(from start: Double, seconds: Double, cadenceHz: Double, amplitude: Double = 3) -> [Sample] {
        let count = Int((seconds * rateHz).rounded())
        let halfStep = 0.5 / cadenceHz
        return (0..<count).map { k in
            let t = start + Double(k) / rateHz
            let phase = 2 * Double.pi * cadenceHz * (t - start - halfStep)
            let fade = min(1, (t - start) / halfStep, (start + seconds - t) / halfStep)
            let vertical = fade * amplitude * (cos(phase) + 0.3 * cos(2 * phase))
            return Sample(time: t, x: fade * 0.4 * amplitude * sin(phase / 2), y: 0.1, z: standardGravity + vertical)
        }
    }

    func stillSamples(from start: Double, seconds: Double, noise: Double = 0, seed: UInt64 = 1) -> [Sample] {
        var generator = SplitMix(seed: seed)
        let count = Int(seconds * rateHz)
        return (0..<count).map { k in
            Sample(time: start + Double(k) / rateHz, x: noise * generator.gaussian(), y: noise * generator.gaussian(),
                   z: standardGravity + noise * generator.gaussian())
        }
    }

    func detect(_ samples: [Sample]) -> [Double] {
        let detector = PeakStepDetector(sampleRateHz: rateHz)
        var steps: [Double] = []
        for sample in samples { detector.process(sample, steps: &steps) }
        return steps
    }

    func testCleanTwoHertzGaitCountsEveryStep() {
        // 20 s at 2 steps/s: 40 footfalls, the first at t = 2.25 s, and the closing step that brings the feet
        // together, which moves the body too little to show: counted when the pause outlasts a step.
        let samples = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 20, cadenceHz: 2)
            + stillSamples(from: 22, seconds: 3)
        let steps = detect(samples)
        XCTAssertEqual(steps.count, 41)
        XCTAssertEqual(steps.last! - steps[steps.count - 2], 0.5, accuracy: 0.05, "the closing step, one period on")
        // Steady inside the walk; the fading first and last steps are stamped a little off their crests.
        let intervals = zip(steps.dropLast().dropFirst(), steps.dropLast()).map { $0 - $1 }
        XCTAssertEqual(intervals.dropFirst().dropLast().min()!, 0.5, accuracy: 0.02)
        XCTAssertEqual(intervals.dropFirst().dropLast().max()!, 0.5, accuracy: 0.02)
        XCTAssertEqual(intervals.min()!, 0.5, accuracy: 0.1)
    }

    func testSittingDownAfterAWalkCountsNoClosingStep() {
        // The same walk, then the thigh (and the phone in its pocket) turns from upright to level within 0.8 s
        // as the walker sits: gravity moves from the device's z axis to its x axis, |a| stays g, so the sit
        // makes no cycle; the footfall that would close the walk is not counted: the walker sat instead.
        let walk = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 20, cadenceHz: 2)
        let sit = (0..<Int(3 * rateHz)).map { k -> Sample in
            let t = 22 + Double(k) / rateHz
            let angle = 0.5 * Double.pi * min(1, (t - 22) / 0.8)
            return Sample(time: t, x: standardGravity * sin(angle), y: 0.1, z: standardGravity * cos(angle))
        }
        let standing = detect(walk + stillSamples(from: 22, seconds: 3))
        XCTAssertEqual(standing.count, 41, "forty footfalls and the closing step")
        XCTAssertEqual(detect(walk + sit), Array(standing.dropLast()))
    }

    func testASitStillUnderWayWhenThePauseEndsCountsNoClosingStep() {
        // At the end of the pause the device has turned by 30° (a sit that has begun): no closing step. A hand
        // that settles by 12° while the walker stands still keeps it.
        let walk = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 20, cadenceHz: 2)
        func turned(by degrees: Double) -> [Sample] {
            (0..<Int(3 * rateHz)).map { k -> Sample in
                let t = 22 + Double(k) / rateHz
                let angle = degrees * Double.pi / 180 * min(1, (t - 22) / 0.8)
                return Sample(time: t, x: standardGravity * sin(angle), y: 0.1, z: standardGravity * cos(angle))
            }
        }
        let standing = detect(walk + stillSamples(from: 22, seconds: 3))
        XCTAssertEqual(detect(walk + turned(by: 12)), standing)
        XCTAssertEqual(detect(walk + turned(by: 30)), Array(standing.dropLast()))
    }

    /// `samples` with gravity (and everything else) turned about the device's y axis by `degrees`, from 0 at
    /// `from` to all of it at `to`: a thigh going level as its owner sits, a phone raised to read it.
    func turning(_ samples: [Sample], by degrees: Double, from: Double, to: Double) -> [Sample] {
        samples.map { sample in
            let angle = degrees * Double.pi / 180 * min(1, max(0, (sample.time - from) / (to - from)))
            let a = sample.acceleration
            return Sample(time: sample.time, x: a.x * cos(angle) + a.z * sin(angle), y: a.y,
                          z: -a.x * sin(angle) + a.z * cos(angle))
        }
    }

    func testAFootfallWhileSittingDownIsNotCounted() {
        // The walk's last footfall (22.25 s) comes while the thigh turns level (80° over 21.7-22.3 s) and the
        // walker sits on: it waits for a next step that never comes, and the posture stays turned, so it is
        // dropped, with the closing step. The same footfall with the posture upright counts.
        let walk = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 20.5, cadenceHz: 2)
            + stillSamples(from: 22.5, seconds: 3)
        let standing = detect(walk)
        XCTAssertEqual(standing.count, 42, "41 footfalls and the closing step")
        XCTAssertEqual(detect(turning(walk, by: 80, from: 21.7, to: 22.3)), Array(standing.dropLast(2)))
    }

    func testAFootfallWhileThePhoneIsRaisedCountsWithTheNext() {
        // The same turn while the walk goes on (a phone raised to read it, and walked with): the footfall made
        // while it turned waits and counts when the next one does, so every footfall is there.
        let walk = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 25, cadenceHz: 2)
            + stillSamples(from: 27, seconds: 3)
        let upright = detect(walk)
        XCTAssertEqual(upright.count, 51)
        XCTAssertEqual(detect(turning(walk, by: 80, from: 21.7, to: 22.3)), upright)
    }

    func testSlowAndBriskCadencesCountEveryStep() {
        for cadence in [1.4, 2.5] {
            let seconds = 40 / cadence
            let samples = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: seconds, cadenceHz: cadence)
                + stillSamples(from: 2 + seconds, seconds: 3)
            XCTAssertEqual(detect(samples).count, 41, "cadence \(cadence) Hz: 40 footfalls and the closing step")
        }
    }

    func testFirstStepsOfABoutAreCountedRetroactively() {
        let detector = PeakStepDetector(sampleRateHz: rateHz)
        var steps: [Double] = []
        var reportedAt: [(reported: Double, step: Double)] = []
        for sample in stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 10, cadenceHz: 2) {
            let before = steps.count
            detector.process(sample, steps: &steps)
            for step in steps[before...] { reportedAt.append((sample.time, step)) }
        }
        XCTAssertEqual(steps.count, 20)
        XCTAssertEqual(steps, steps.sorted(), "retroactive steps never go back before an already reported one")
        // An even walk confirms on four even steps; the first footfall, fading in, is smaller than the next
        // four, so they are the run: the first five steps arrive together, with their own earlier times.
        let first = reportedAt.prefix { $0.reported == reportedAt[0].reported }
        XCTAssertEqual(first.count, 5)
        XCTAssertEqual(first.first!.step, 2.25, accuracy: 0.2)
        XCTAssertLessThan(first.first!.step, first.first!.reported - 1.9)
        // Later steps are reported within a second of their instant.
        for entry in reportedAt.dropFirst(first.count) {
            XCTAssertLessThan(entry.reported - entry.step, 1.0)
            XCTAssertGreaterThanOrEqual(entry.reported - entry.step, 0)
        }
    }

    func testSensorNoiseAddsNoSteps() {
        XCTAssertEqual(detect(stillSamples(from: 0, seconds: 60, noise: 0.3)), [])
    }

    func testDeviceOnATableAddsNoSteps() {
        XCTAssertEqual(detect(stillSamples(from: 0, seconds: 60)), [])
    }

    func testVehicleVibrationAddsNoSteps() {
        // A bus: engine vibration at 25 Hz and road rumble well below walking cadence, plus broadband noise.
        var generator = SplitMix(seed: 7)
        let samples = (0..<Int(120 * rateHz)).map { k -> Sample in
            let t = Double(k) / rateHz
            let z = standardGravity + 1.5 * sin(2 * Double.pi * 25 * t) + 0.8 * sin(2 * Double.pi * 0.3 * t)
                + 0.4 * generator.gaussian()
            return Sample(time: t, x: 0.5 * sin(2 * Double.pi * 0.2 * t) + 0.3 * generator.gaussian(), y: 0.3 * generator.gaussian(), z: z)
        }
        XCTAssertEqual(detect(samples), [])
    }

    func testAFewHandlingJoltsAddNoSteps() {
        // Picking the phone up and putting it down: three jolts, then stillness.
        var samples = stillSamples(from: 0, seconds: 10, noise: 0.05)
        for (index, jolt) in [2.0, 3.1, 5.0].enumerated() {
            let k = Int(jolt * rateHz)
            for d in 0..<12 { samples[k + d].acceleration.z += Double(6 - index) * sin(Double.pi * Double(d) / 12) }
        }
        XCTAssertEqual(detect(samples), [])
    }

    func testPickingThePhoneUpRightAfterAWalkAddsNoSteps() {
        // A walk that stops, then, once the pause has outlasted a step, the phone taken out and lifted: three
        // jolts of falling size at no walking rhythm. The count must be the walk's own.
        let walk = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 6, cadenceHz: 2)
        var after = stillSamples(from: 8, seconds: 6, noise: 0.05)
        for (index, jolt) in [9.5, 10.2, 10.6].enumerated() {
            let k = Int((jolt - 8) * rateHz)
            for d in 0..<12 { after[k + d].acceleration.z += Double(6 - index) * sin(Double.pi * Double(d) / 12) }
        }
        let alone = detect(walk + stillSamples(from: 8, seconds: 6, noise: 0.05))
        XCTAssertEqual(alone.count, 13, "twelve footfalls and the closing step")
        XCTAssertEqual(detect(walk + after), alone)
    }

    func testFiveStepsBetweenPausesCount() {
        // A few steps to the fridge: five even footfalls and the closing step are walking.
        let samples = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 2.5, cadenceHz: 2)
            + stillSamples(from: 4.5, seconds: 4)
        XCTAssertEqual(detect(samples).count, 6)
    }

    func testTwoStepsBetweenPausesDoNotCount() {
        // Shifting one's weight or a step aside is not a walk.
        let samples = stillSamples(from: 0, seconds: 2) + walkingSamples(from: 2, seconds: 1, cadenceHz: 2)
            + stillSamples(from: 3, seconds: 4)
        XCTAssertEqual(detect(samples), [])
    }

    func testPocketingAndTypingAddNoSteps() {
        // Taking the phone from a table, four jolts of falling size half a second apart as it goes into a pocket,
        // then typing on it: taps at 5 Hz, above walking cadence.
        var samples = stillSamples(from: 0, seconds: 12, noise: 0.05)
        for (index, jolt) in [2.0, 2.5, 3.0, 3.5].enumerated() {
            let k = Int(jolt * rateHz)
            for d in 0..<12 { samples[k + d].acceleration.z += Double(8 - 2 * index) * sin(Double.pi * Double(d) / 12) }
        }
        for k in Int(6 * rateHz)..<Int(11 * rateHz) {
            samples[k].acceleration.z += 1.5 * max(0, sin(2 * Double.pi * 5 * samples[k].time))
        }
        XCTAssertEqual(detect(samples), [])
    }

    func testGapInTheStreamRestartsCleanly() {
        // The same walk twice, 30 s apart (a suspended laptop): twice the steps, no ringing at the jump.
        let walk = walkingSamples(from: 0, seconds: 10, cadenceHz: 2)
        let later = walk.map { Sample(time: $0.time + 40, acceleration: $0.acceleration) }
        let steps = detect(walk + later)
        XCTAssertEqual(steps.count, 2 * detect(walk).count)
        XCTAssertEqual(detect(walk).count, 20)
    }

    func testResetForgetsTheWalk() {
        let detector = PeakStepDetector(sampleRateHz: rateHz)
        var steps: [Double] = []
        for sample in walkingSamples(from: 0, seconds: 10, cadenceHz: 2) { detector.process(sample, steps: &steps) }
        XCTAssertTrue(detector.isWalking)
        detector.reset()
        XCTAssertFalse(detector.isWalking)
        var again: [Double] = []
        for sample in walkingSamples(from: 0, seconds: 10, cadenceHz: 2) { detector.process(sample, steps: &again) }
        XCTAssertEqual(again, steps)
    }
}
