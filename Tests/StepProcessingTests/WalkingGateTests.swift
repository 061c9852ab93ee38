import Foundation
import XCTest
@testable import StepProcessing

/// The walking gate on synthetic motion whose physics is known: a walk bounces the device along gravity at the
/// step rate; brushing teeth scrubs across gravity at twice it with the forearm still; combing strokes along the
/// head while the wrist rolls. All three make a regular oscillation of |a| at a walking cadence, which the
/// detector without the gate counts as steps.
final class WalkingGateTests: XCTestCase {
    let rateHz = 60.0

    /// Gravity on z; the body's bounce along it at `stepHz`, the arm's swing across it at half that.
    func walking(seconds: Double, stepHz: Double = 1.8) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { k in
            let t = Double(k) / rateHz
            return Sample(time: t, x: 0.8 * sin(Double.pi * stepHz * t), y: 0,
                          z: standardGravity + 2.5 * sin(2 * Double.pi * stepHz * t))
        }
    }

    /// Scrubbing sideways at 3.5 Hz (4 m/s^2), with a weaker 1.75 Hz wobble in both the other axes: 105
    /// oscillations of |a| a minute, the rate the HMP wrist recordings show, with a small vertical share.
    func brushingTeeth(seconds: Double) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { k in
            let t = Double(k) / rateHz, f = 1.75
            return Sample(time: t, x: 4 * sin(2 * Double.pi * 2 * f * t), y: 1.5 * sin(2 * Double.pi * f * t + 0.5),
                          z: standardGravity + 0.8 * sin(2 * Double.pi * f * t))
        }
    }

    /// Strokes at 1.6 Hz: the wrist rolls ±34° about x (gravity turns between y and z) while the hand moves
    /// 3 m/s^2 along x and 1.2 m/s^2 along z.
    func combingHair(seconds: Double) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { k in
            let t = Double(k) / rateHz, f = 1.6
            let roll = 0.6 * sin(2 * Double.pi * f * t), stroke = sin(2 * Double.pi * f * t)
            return Sample(time: t, x: 3 * stroke, y: -standardGravity * sin(roll),
                          z: standardGravity * cos(roll) + 1.2 * stroke)
        }
    }

    /// A phone in a trouser pocket: the thigh swings it ±34° once a stride (gravity turns between y and z at about
    /// 1.3 rad/s, as fast as a wrist combing hair), the body bounces it at the step rate, and each heel strike
    /// rings through it (a 9 Hz shock decaying over 0.1 of a step), so the shock ratio is about 2.5, as the
    /// Cambridge back-pocket walk p08-2 whose gate stayed half shut.
    /// `heelStrike` 0 is a soft-soled walk: the thigh turns the phone as much, with no shock to excuse it.
    func pocketWalking(seconds: Double, stepHz: Double = 1.8, heelStrike: Double = 14) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { k in
            let t = Double(k) / rateHz
            let phase = (t * stepHz).truncatingRemainder(dividingBy: 1)
            let roll = 0.6 * sin(Double.pi * stepHz * t)
            let heelStrike = heelStrike * exp(-phase / stepHz / 0.1) * sin(2 * Double.pi * 9 * phase / stepHz)
            let along = standardGravity + 2.5 * sin(2 * Double.pi * stepHz * t) + heelStrike
            return Sample(time: t, x: 0.5 * sin(Double.pi * stepHz * t), y: along * sin(roll), z: along * cos(roll))
        }
    }

    /// The gate's state after each sample, fed as the detector feeds it.
    func openings(_ samples: [Sample], configuration: WalkingGate.Configuration = .init())
        -> [(time: Double, open: Bool, since: Double)] {
        var gate = WalkingGate(configuration: configuration, sampleRateHz: rateHz)
        var highPass = Biquad.highPass(cutoffHz: 0.8, sampleRateHz: rateHz)
        var lowPass = Biquad.lowPass(cutoffHz: 2.5, sampleRateHz: rateHz)
        var result: [(Double, Bool, Double)] = []
        for (k, sample) in samples.enumerated() {
            let magnitude = sample.acceleration.magnitude
            if k == 0 {
                gate.settle(at: sample.acceleration, magnitude: magnitude)
                highPass.settle(at: magnitude)
                lowPass.settle(at: 0)
            }
            let band = lowPass.apply(highPass.apply(magnitude))
            gate.process(sample.acceleration, magnitude: magnitude, band: band, time: sample.time)
            result.append((sample.time, gate.isOpen, gate.openSince))
        }
        return result
    }

    func count(_ samples: [Sample], gate: WalkingGate.Configuration?) -> Int {
        var configuration = PeakStepDetector.Configuration(sampleRateHz: rateHz)
        configuration.gate = gate
        let detector = PeakStepDetector(configuration: configuration)
        var steps: [Double] = []
        for sample in samples { detector.process(sample, steps: &steps) }
        return steps.count
    }

    func testWalkingOpensTheGateAtOnceAndKeepsItOpen() {
        let states = openings(walking(seconds: 30))
        let afterFirstSecond = states.filter { $0.time >= 1 }
        XCTAssertTrue(afterFirstSecond.allSatisfy(\.open), "a walk is gait throughout")
        XCTAssertLessThanOrEqual(states.last!.since, 1.0, "open from the first second on, without a restart")
    }

    func testAThighsTurningWithHeelStrikesKeepsTheGateOpen() {
        // Issue 36: with the turning discounted by 1 + shock ratio, not its cube, this walk closed the gate.
        let states = openings(pocketWalking(seconds: 30)).filter { $0.time >= 3 }
        XCTAssertTrue(states.allSatisfy(\.open), "open \(states.filter(\.open).count) of \(states.count) samples")
        var undiscounted = WalkingGate.Configuration()
        undiscounted.shockRelief = 0
        let closed = openings(pocketWalking(seconds: 30), configuration: undiscounted).filter { $0.time >= 3 && !$0.open }
        XCTAssertGreaterThan(closed.count, states.count / 2, "the shock discount is what keeps it open")
    }

    func testAPocketCannotCloseTheGateByTurningWhenThePlacementIsKnown() {
        let softWalk = pocketWalking(seconds: 30, heelStrike: 0)
        let unknown = openings(softWalk).filter { $0.time >= 3 }
        XCTAssertGreaterThan(unknown.filter { !$0.open }.count, unknown.count / 2,
                             "not said where it is, a device turning this fast with no shock may be a hand at work")
        let pocket = openings(softWalk, configuration: .init(placement: .pocket)).filter { $0.time >= 3 }
        XCTAssertTrue(pocket.allSatisfy(\.open), "open \(pocket.filter(\.open).count) of \(pocket.count) samples")
    }

    func testOnlyPlacementsThatMayBeAWorkingHandJudgeTheTurning() {
        let judged = Placement.allCases.filter { WalkingGate.Configuration(placement: $0).judgesTurning }
        XCTAssertEqual(judged, [.auto, .wrist, .hand])
        XCTAssertEqual(WalkingGate.Configuration(placement: .auto), WalkingGate.Configuration(),
                       "auto is the gate the detector has always run")
        for placement in [Placement.auto, .wrist, .hand] {
            let states = openings(combingHair(seconds: 60), configuration: .init(placement: placement))
            XCTAssertEqual(states.filter { $0.time >= 2 && $0.open }.count, 0, "\(placement)")
        }
    }

    func testTheConfiguredPlacementReachesTheDetector() {
        let softWalk = pocketWalking(seconds: 30, heelStrike: 0)
        func steps(_ placement: Placement) -> Int {
            let detector = StepDetectorKind.peak.make(sampleRateHz: rateHz, placement: placement)
            var steps: [Double] = []
            for sample in softWalk { detector.process(sample, steps: &steps) }
            return steps.count
        }
        // 30 s at 1.8 steps a second: 54 steps, the first and last less certain.
        XCTAssertGreaterThanOrEqual(steps(.pocket), 50)
        XCTAssertLessThan(steps(.auto), steps(.pocket) - 10, "auto keeps judging the turning")
    }

    func testBrushingTeethNeverOpensTheGate() {
        let states = openings(brushingTeeth(seconds: 60))
        XCTAssertEqual(states.filter { $0.time >= 2 && $0.open }.count, 0)
    }

    func testCombingHairNeverOpensTheGate() {
        let states = openings(combingHair(seconds: 60))
        XCTAssertEqual(states.filter { $0.time >= 2 && $0.open }.count, 0)
    }

    func testTheDefaultDetectorCountsNoStepsWhileTeethAreBrushedOrHairCombed() {
        // Issue 27: on the wrist, brushing teeth counted about 105 steps a minute.
        for samples in [brushingTeeth(seconds: 60), combingHair(seconds: 60)] {
            let detector = PeakStepDetector(sampleRateHz: rateHz)
            var steps: [Double] = []
            for sample in samples { detector.process(sample, steps: &steps) }
            XCTAssertEqual(steps.count, 0, "the first at \(steps.prefix(3))")
        }
    }

    func testTheDetectorCountsTheWalkButNotTheHandWork() {
        // Without the gate the detector counts both hand activities at their stroke rate (about 105 and 96 steps
        // a minute); with it, none, and the walk's steps are all there.
        XCTAssertGreaterThan(count(brushingTeeth(seconds: 60), gate: nil), 90)
        XCTAssertGreaterThan(count(combingHair(seconds: 60), gate: nil), 80)
        XCTAssertEqual(count(brushingTeeth(seconds: 60), gate: .init()), 0)
        XCTAssertEqual(count(combingHair(seconds: 60), gate: .init()), 0)
        let walk = walking(seconds: 30)
        XCTAssertEqual(count(walk, gate: .init()), count(walk, gate: nil))
        XCTAssertGreaterThanOrEqual(count(walk, gate: .init()), 53)
    }

    func still(from start: Double, seconds: Double) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { k in Sample(time: start + Double(k) / rateHz, x: 0, y: 0, z: standardGravity) }
    }

    func testHandWorkRightAfterAWalkAddsNothingOnceTheWalkHasPaused() {
        // A walk, a pause of two seconds (the bout ends), then brushing teeth: the walk's own count.
        let walk = walking(seconds: 20) + still(from: 20, seconds: 2)
        let brushing = brushingTeeth(seconds: 40).map { Sample(time: $0.time + 22, acceleration: $0.acceleration) }
        XCTAssertEqual(count(walk + brushing, gate: .init()), count(walk, gate: .init()))
    }

    func testHandWorkWithoutAPauseEndsTheBoutWithinSeconds() {
        // Brushing at once (half a second after the walk): the bout runs on while the gate's averages still hold
        // the walk, then ends once the gate has been closed for four seconds; 40 s of strokes would be 70 steps.
        let walk = walking(seconds: 20) + still(from: 20, seconds: 0.5)
        let brushing = brushingTeeth(seconds: 40).map { Sample(time: $0.time + 20.5, acceleration: $0.acceleration) }
        let alone = count(walk, gate: .init())
        let both = count(walk + brushing, gate: .init())
        XCTAssertGreaterThanOrEqual(both, alone)
        XCTAssertLessThanOrEqual(both, alone + 15, "at most a few seconds of strokes")
        XCTAssertGreaterThan(count(walk + brushing, gate: nil), alone + 60, "without the gate the bout takes them all")
    }
}
