import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

/// StillnessDetector: a resting device is still after four quiet seconds, whatever its noise and rate; a gait,
/// slow or fast, and the pause between two walks never are; motion ends stillness with the sample that shows it.
final class StillnessDetectorTests: XCTestCase {
    /// Gravity tilted 10° about x plus white noise of `sigma` per axis (a resting wrist).
    private func rest(from t0: Double, seconds: Double, rateHz: Double, sigma: Double, _ rng: inout SplitMix) -> [Sample] {
        let g = Vector3(x: 0, y: standardGravity * sin(.pi / 18), z: standardGravity * cos(.pi / 18))
        return (0..<Int(seconds * rateHz)).map { n in
            Sample(time: t0 + Double(n) / rateHz, acceleration: g + Vector3(x: sigma * rng.gaussian(), y: sigma * rng.gaussian(), z: sigma * rng.gaussian()))
        }
    }

    /// A gait: vertical acceleration `amplitude` at the step rate, a sway at half of it, plus the sensor's noise.
    private func walk(from t0: Double, seconds: Double, rateHz: Double, stepsPerSecond: Double, amplitude: Double,
                      _ rng: inout SplitMix) -> [Sample] {
        (0..<Int(seconds * rateHz)).map { n in
            let t = t0 + Double(n) / rateHz
            let vertical = amplitude * sin(2 * .pi * stepsPerSecond * t)
            let sway = 0.3 * amplitude * sin(.pi * stepsPerSecond * t)
            return Sample(time: t, acceleration: Vector3(x: sway + 0.01 * rng.gaussian(), y: 0.01 * rng.gaussian(),
                                                         z: standardGravity + vertical + 0.01 * rng.gaussian()))
        }
    }

    /// The first sample time at which the detector says still, or nil.
    private func firstStill(_ samples: [Sample], _ detector: inout StillnessDetector) -> Double? {
        var first: Double?
        for s in samples {
            detector.add(s)
            if first == nil, detector.isStill { first = s.time }
        }
        return first
    }

    func testARestingDeviceIsStillAfterFourQuietSecondsAtAnyRateAndNoise() {
        // BMI160's 1.0 mg per axis at 62.5 Hz, and an ADXL345-class 4 mg at 25 and 100 Hz.
        for (rate, sigma) in [(62.5, 0.0099), (25.0, 0.04), (100.0, 0.04)] {
            var rng = SplitMix(seed: 29)
            var detector = StillnessDetector()
            let samples = rest(from: 100, seconds: 20, rateHz: rate, sigma: sigma, &rng)
            guard let still = firstStill(samples, &detector) else { return XCTFail("\(rate) Hz, sigma \(sigma): never still") }
            XCTAssertEqual(still - 100, StillnessDetector.quietSecondsToBeStill, accuracy: 1.1, "\(rate) Hz")
            XCTAssertTrue(detector.isStill, "\(rate) Hz: still to the end")
        }
    }

    func testWalkingSlowOrFastIsNeverStill() {
        // From a slow shuffle (1.2 steps/s, 0.5 m/s^2) to a brisk walk (2.2 steps/s, 3 m/s^2).
        for (rate, amplitude) in [(1.2, 0.5), (1.8, 1.5), (2.2, 3.0)] {
            var rng = SplitMix(seed: 7)
            var detector = StillnessDetector()
            let samples = walk(from: 0, seconds: 60, rateHz: 62.5, stepsPerSecond: rate, amplitude: amplitude, &rng)
            XCTAssertNil(firstStill(samples, &detector), "\(rate) steps/s at \(amplitude) m/s^2 passed for stillness")
        }
    }

    func testAPauseBetweenTwoWalksIsNotStillnessButALongerRestIs() {
        var rng = SplitMix(seed: 3)
        var detector = StillnessDetector()
        let first = walk(from: 0, seconds: 10, rateHz: 62.5, stepsPerSecond: 1.8, amplitude: 1.5, &rng)
        let pause = rest(from: 10, seconds: 3, rateHz: 62.5, sigma: 0.0099, &rng)
        let second = walk(from: 13, seconds: 10, rateHz: 62.5, stepsPerSecond: 1.8, amplitude: 1.5, &rng)
        XCTAssertNil(firstStill(first + pause + second, &detector), "a 3 s pause made the source batch slowly")
        let rest = rest(from: 23, seconds: 10, rateHz: 62.5, sigma: 0.0099, &rng)
        let still = firstStill(rest, &detector)
        XCTAssertNotNil(still)
        // The block with the walk's end is not quiet: stillness comes 4-5 s after the last motion.
        XCTAssertEqual((still ?? 0) - 23, 4.5, accuracy: 1.0)
    }

    func testMotionEndsStillnessWithTheSampleThatShowsIt() {
        var rng = SplitMix(seed: 11)
        var detector = StillnessDetector()
        detector.add(rest(from: 0, seconds: 10, rateHz: 62.5, sigma: 0.0099, &rng))
        XCTAssertTrue(detector.isStill)
        // A 5 s batch whose motion starts in its last 0.3 s, in the middle of a one-second block.
        var batch = rest(from: 10, seconds: 4.7, rateHz: 62.5, sigma: 0.0099, &rng)
        batch += walk(from: 14.7, seconds: 0.3, rateHz: 62.5, stepsPerSecond: 1.8, amplitude: 1.5, &rng)
        detector.add(batch)
        XCTAssertFalse(detector.isStill, "motion at the end of a batch must bring the walking rate back at once")
        // Resting again, it takes the full four quiet seconds once more.
        let again = firstStill(rest(from: 15, seconds: 10, rateHz: 62.5, sigma: 0.0099, &rng), &detector)
        XCTAssertGreaterThanOrEqual((again ?? 0) - 15, StillnessDetector.quietSecondsToBeStill - 1)
    }

    func testAGapInTheSamplesStartsTheQuietRunAgainAndBadSamplesAreIgnored() {
        var rng = SplitMix(seed: 5)
        var detector = StillnessDetector()
        detector.add(rest(from: 0, seconds: 3.5, rateHz: 62.5, sigma: 0.0099, &rng))
        // Ten seconds with no sample: nothing known of them.
        XCTAssertNil(firstStill(rest(from: 13.5, seconds: 3, rateHz: 62.5, sigma: 0.0099, &rng), &detector))
        detector.add(Sample(time: 16.6, acceleration: Vector3(x: .nan, y: 0, z: 9.8)))
        detector.add(Sample(time: 1, acceleration: Vector3(x: 50, y: 0, z: 9.8)))   // time going back
        XCTAssertNotNil(firstStill(rest(from: 16.6, seconds: 3, rateHz: 62.5, sigma: 0.0099, &rng), &detector))
    }
}
