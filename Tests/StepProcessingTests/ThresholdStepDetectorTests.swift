import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

final class ThresholdStepDetectorTests: XCTestCase {
    /// A vertical bounce of `amplitudeG` around 1 g at `cadenceHz`, sampled at 60 Hz.
    private func bounce(cadenceHz: Double, amplitudeG: Double, seconds: Double) -> [Sample] {
        (0..<Int(seconds * 60)).map { n in
            let t = Double(n) / 60
            return Sample(time: t, x: 0, y: 0, z: standardGravity * (1 + amplitudeG * sin(2 * Double.pi * cadenceHz * t)))
        }
    }

    private func count(_ detector: StepDetector, _ samples: [Sample]) -> [Double] {
        var steps: [Double] = []
        for s in samples { detector.process(s, steps: &steps) }
        return steps
    }

    func testOneStepPerBounceThatCrossesBothThresholds() {
        let steps = count(ThresholdStepDetector(), bounce(cadenceHz: 2, amplitudeG: 0.3, seconds: 10))
        XCTAssertEqual(steps.count, 20)
        // A step is reported as the signal falls below 0.9 g, in the second half of each cycle.
        for (i, t) in steps.enumerated() {
            let phase = t * 2 - Double(i)
            XCTAssert(phase > 0.5 && phase < 1, "step \(i) at \(t)")
        }
    }

    func testBounceThatNeverRisesAbove1Point1GCountsNothing() {
        XCTAssertEqual(count(ThresholdStepDetector(), bounce(cadenceHz: 2, amplitudeG: 0.08, seconds: 10)).count, 0)
    }

    func testRiseWithoutFallCountsNothing() {
        let samples = (0..<120).map { Sample(time: Double($0) / 60, x: 0, y: 0, z: standardGravity * 1.3) }
        XCTAssertEqual(count(ThresholdStepDetector(), samples).count, 0)
    }

    func testThresholdsAreConfigurable() {
        let loose = ThresholdStepDetector(configuration: .init(riseAboveG: 1.05, fallBelowG: 0.95))
        XCTAssertEqual(count(loose, bounce(cadenceHz: 2, amplitudeG: 0.08, seconds: 10)).count, 20)
    }

    func testCutoffIsConfigurable() {
        // A 12 Hz vibration of 0.3 g passes a 20 Hz filter but is mostly removed by the seed's 5 Hz one.
        let vibration = bounce(cadenceHz: 12, amplitudeG: 0.3, seconds: 5)
        XCTAssertEqual(count(ThresholdStepDetector(), vibration).count, 0)
        XCTAssertGreaterThan(count(ThresholdStepDetector(configuration: .init(cutoffHz: 20)), vibration).count, 0)
    }

    func testResetForgetsAHalfFinishedStep() {
        let detector = ThresholdStepDetector()
        var steps: [Double] = []
        for s in bounce(cadenceHz: 2, amplitudeG: 0.3, seconds: 0.2) { detector.process(s, steps: &steps) }
        detector.reset()
        let low = (0..<30).map { Sample(time: Double($0) / 60, x: 0, y: 0, z: standardGravity * 0.8) }
        for s in low { detector.process(s, steps: &steps) }
        XCTAssertEqual(steps.count, 0)
    }
}

final class StepPipelineTests: XCTestCase {
    func testSamePipelineGivesSameStepsWhateverTheBatching() {
        var generator = SplitMix(seed: 7)
        var t = 0.0
        let samples: [Sample] = (0..<6000).map { _ in
            t += 0.008 + 0.004 * generator.nextUnit()
            return Sample(time: t, x: 0.5, y: 0, z: standardGravity * (1 + 0.35 * sin(2 * Double.pi * 1.8 * t)))
        }
        for kind in StepDetectorKind.allCases {
            let whole = StepPipeline(detector: kind.make(sampleRateHz: 60))
            var a: [Double] = []
            whole.process(samples) { a.append($0) }
            let batched = StepPipeline(detector: kind.make(sampleRateHz: 60))
            var b: [Double] = []
            for start in stride(from: 0, to: samples.count, by: 13) {
                batched.process(samples[start..<min(start + 13, samples.count)]) { b.append($0) }
            }
            XCTAssertEqual(a, b, "detector \(kind)")
            XCTAssertGreaterThan(a.count, 50, "detector \(kind) counts the 1.8 Hz bounce")
            XCTAssertEqual(whole.samplesIn, samples.count)
        }
    }
}
