import Foundation
import XCTest
@testable import StepProcessing

final class LowPassFilterTests: XCTestCase {
    func testAlphaFollowsTheSeedFormula() {
        let filter = LowPassFilter(cutoffHz: 5, sampleRateHz: 60)
        let dt = 1.0 / 60, rc = 1 / (2 * Double.pi * 5)
        XCTAssertEqual(filter.alpha, dt / (dt + rc), accuracy: 1e-15)
        XCTAssertEqual(filter.alpha, 0.343659, accuracy: 1e-6)
    }

    func testStepResponseApproachesTheInputGeometrically() {
        var filter = LowPassFilter(cutoffHz: 5, sampleRateHz: 60)
        _ = filter.apply(.zero)
        let one = Vector3(x: 1, y: -2, z: 0.5)
        for n in 1...30 {
            let y = filter.apply(one)
            let expected = 1 - pow(1 - filter.alpha, Double(n))
            XCTAssertEqual(y.x, expected, accuracy: 1e-12)
            XCTAssertEqual(y.y, -2 * expected, accuracy: 1e-12)
            XCTAssertEqual(y.z, 0.5 * expected, accuracy: 1e-12)
        }
    }

    func testFirstSampleInitialisesTheState() {
        var filter = LowPassFilter(cutoffHz: 5, sampleRateHz: 60)
        let gravity = Vector3(x: 0, y: 0, z: standardGravity)
        XCTAssertEqual(filter.apply(gravity), gravity)
        XCTAssertEqual(filter.apply(gravity), gravity)
    }

    /// The discrete RC filter's gain, |alpha / (1 - (1 - alpha) e^{-jw})|, measured on sines.
    func testGainPassesWalkingAndAttenuatesVibration() {
        let rate = 60.0
        for (frequency, low, high) in [(0.5, 0.99, 1.0), (5.0, 0.62, 0.72), (20.0, 0.0, 0.35)] {
            var filter = LowPassFilter(cutoffHz: 5, sampleRateHz: rate)
            var peak = 0.0
            for n in 0..<600 {
                let x = sin(2 * Double.pi * frequency * Double(n) / rate)
                let y = filter.apply(Vector3(x: x, y: 0, z: 0)).x
                if n >= 300 { peak = max(peak, abs(y)) }
            }
            let alpha = filter.alpha, w = 2 * Double.pi * frequency / rate
            let analytic = alpha / ((1 - (1 - alpha) * cos(w)) * (1 - (1 - alpha) * cos(w))
                                    + (1 - alpha) * sin(w) * (1 - alpha) * sin(w)).squareRoot()
            XCTAssertEqual(peak, analytic, accuracy: 0.02, "gain at \(frequency) Hz")
            XCTAssert(peak >= low && peak <= high, "gain \(peak) at \(frequency) Hz outside \(low)...\(high)")
        }
    }
}

final class BiquadTests: XCTestCase {
    func testButterworthLowPassHasUnityDCGainAndHalfPowerAtCutoff() {
        for cutoff in [2.0, 3.5, 10.0] {
            var filter = Biquad.lowPass(cutoffHz: cutoff, sampleRateHz: 60)
            XCTAssertEqual((filter.b0 + filter.b1 + filter.b2) / (1 + filter.a1 + filter.a2), 1, accuracy: 1e-12)
            var peak = 0.0
            for n in 0..<1200 {
                let y = filter.apply(sin(2 * Double.pi * cutoff * Double(n) / 60))
                if n > 600 { peak = max(peak, abs(y)) }
            }
            XCTAssertEqual(peak, 0.5.squareRoot(), accuracy: 0.01, "gain at cutoff \(cutoff) Hz")
        }
    }

    func testHighPassRemovesGravity() {
        var filter = Biquad.highPass(cutoffHz: 0.5, sampleRateHz: 60)
        filter.settle(at: standardGravity)
        for _ in 0..<100 { XCTAssertEqual(filter.apply(standardGravity), 0, accuracy: 1e-9) }
    }
}
