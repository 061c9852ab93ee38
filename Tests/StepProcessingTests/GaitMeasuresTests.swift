import Foundation
import XCTest
@testable import StepProcessing

final class GaitMeasuresTests: XCTestCase {
    func testStrideTimesAreEverySecondStepAndSkipPauses() throws {
        // Left 0.5 s, right 0.6 s: every stride 1.1 s; a 2 s pause in the middle is no stride.
        var times: [Double] = [0]
        for i in 0..<8 { times.append(times.last! + (i % 2 == 0 ? 0.5 : 0.6)) }
        times.append(times.last! + 2)
        for i in 0..<8 { times.append(times.last! + (i % 2 == 0 ? 0.5 : 0.6)) }
        let stats = try XCTUnwrap(GaitMath.strideStatistics(stepTimes: times, maximumStepSeconds: 1.5))
        XCTAssertEqual(stats.median, 1.1, accuracy: 1e-12)
        XCTAssertEqual(stats.cv, 0, accuracy: 1e-12)
        XCTAssertNil(GaitMath.strideStatistics(stepTimes: [0, 0.5, 1.0], maximumStepSeconds: 1.5), "one stride is too few")
    }

    func testStrideCVIsStandardDeviationOverMean() throws {
        // Strides 1.0 and 1.2 in turn (steps 0.5, 0.5, 0.7, 0.5, 0.5, 0.7 ...).
        let steps = [0.5, 0.5, 0.7, 0.5, 0.5, 0.7, 0.5, 0.5]
        var times: [Double] = [0]
        for s in steps { times.append(times.last! + s) }
        let strides = (0..<(times.count - 2)).map { times[$0 + 2] - times[$0] }
        let mean = strides.reduce(0, +) / Double(strides.count)
        let sd = (strides.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(strides.count - 1)).squareRoot()
        let stats = try XCTUnwrap(GaitMath.strideStatistics(stepTimes: times, maximumStepSeconds: 1.5))
        XCTAssertEqual(stats.cv, sd / mean, accuracy: 1e-12)
        XCTAssertGreaterThan(stats.cv, 0.05)
    }

    func testAutocorrelationOfAPeriodicSignal() throws {
        let x = (0..<600).map { sin(2 * Double.pi * Double($0) / 30) }
        XCTAssertEqual(try XCTUnwrap(GaitMath.autocorrelation(x, segments: [0], lag: 30)), 1, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(GaitMath.autocorrelation(x, segments: [0], lag: 15)), -1, accuracy: 0.01)
        XCTAssertNil(GaitMath.autocorrelation([0, 0, 0], segments: [0], lag: 1), "no energy, no correlation")
    }

    func testAutocorrelationDoesNotPairAcrossAGap() throws {
        // Two stretches of the same sine whose phases do not follow on: joined, lag 30 would pair across the seam.
        let a = (0..<300).map { sin(2 * Double.pi * Double($0) / 30) }
        let b = (0..<300).map { sin(2 * Double.pi * (Double($0) + 7.5) / 30) }
        let split = try XCTUnwrap(GaitMath.autocorrelation(a + b, segments: [0, 300], lag: 30))
        XCTAssertEqual(split, 1, accuracy: 0.01)
    }

    func testPeakAutocorrelationEqualsTheBestSingleLag() throws {
        // The peak search sums four lags per pass; each lag must still give exactly the double of the one-lag sum,
        // across segments of every length relative to the lags (longer, equal, shorter) and any range's width.
        var generator = SystemRandomNumberGenerator()
        for trial in 0..<40 {
            let count = Int.random(in: 20...400, using: &generator)
            let x = (0..<count).map { i in sin(Double(i) / Double(3 + trial % 7)) + Double.random(in: -0.5...0.5, using: &generator) }
            var segments = [0]
            while let last = segments.last, last + 5 < count, segments.count < 4 {
                segments.append(Int.random(in: (last + 1)..<count, using: &generator))
            }
            let low = Int.random(in: 1...30, using: &generator), high = low + Int.random(in: 0...13, using: &generator)
            var expected: (value: Double, lag: Int)?
            for lag in low...high {
                if let value = GaitMath.autocorrelation(x, segments: segments, lag: lag), value > (expected?.value ?? -.infinity) {
                    expected = (value, lag)
                }
            }
            let found = GaitMath.peakAutocorrelation(x, segments: segments, lags: low...high)
            XCTAssertEqual(found?.value, expected?.value, "trial \(trial): \(count) samples, segments \(segments), lags \(low)...\(high)")
            XCTAssertEqual(found?.lag, expected?.lag, "trial \(trial)")
        }
        XCTAssertNil(GaitMath.peakAutocorrelation([0, 0, 0, 0, 0, 0], segments: [0], lags: 1...3), "no energy, no peak")
        XCTAssertNil(GaitMath.peakAutocorrelation([1, 2, 3], segments: [0], lags: 3...8), "no pairs at any lag")
    }

    func testRegularityAndSymmetryOfAnUnevenGait() throws {
        // Steps of 30 samples; every second step is weaker (a limp): the step lag correlates less than the stride lag.
        let x = (0..<1200).map { i -> Double in
            let step = i / 30
            return (step % 2 == 0 ? 1.0 : 0.6) * sin(2 * Double.pi * Double(i) / 30)
        }
        let mean = x.reduce(0, +) / Double(x.count)
        let centred = x.map { $0 - mean }
        let found = try XCTUnwrap(GaitMath.regularityAndSymmetry(centred, segments: [0], stepSamples: 31))
        XCTAssertLessThan(found.regularity, 0.95)
        XCTAssertGreaterThan(found.regularity, 0.7)
        XCTAssertLessThan(found.symmetry, 0.97)
        let even = (0..<1200).map { sin(2 * Double.pi * Double($0) / 30) }
        let evenFound = try XCTUnwrap(GaitMath.regularityAndSymmetry(even, segments: [0], stepSamples: 31))
        XCTAssertEqual(evenFound.regularity, 1, accuracy: 0.01)
        XCTAssertEqual(evenFound.symmetry, 1, accuracy: 0.01)
    }

    func testPendulumStepLength() throws {
        // 2 * sqrt(2 * 0.9 * 0.03 - 0.03^2) = 2 * sqrt(0.0531)
        let length = try XCTUnwrap(GaitMath.pendulumStepLength(excursionMeters: 0.03, legLengthMeters: 0.9, factor: 1))
        XCTAssertEqual(length, 2 * 0.0531.squareRoot(), accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(GaitMath.pendulumStepLength(excursionMeters: 0.03, legLengthMeters: 0.9, factor: 1.25)),
                       1.25 * length, accuracy: 1e-12)
        XCTAssertNil(GaitMath.pendulumStepLength(excursionMeters: 0, legLengthMeters: 0.9, factor: 1))
        XCTAssertNil(GaitMath.pendulumStepLength(excursionMeters: 1, legLengthMeters: 0.9, factor: 1), "higher than the leg")
    }

    func testDisplacementRecoversASinusoidalExcursion() throws {
        // d(t) = A sin(wt) has a(t) = -A w^2 sin(wt); 1.8 steps a second, 2.5 cm either way.
        let rate = 60.0, w = 2 * Double.pi * 1.8, amplitude = 0.025
        let a = (0..<1200).map { -amplitude * w * w * sin(w * Double($0) / rate) + 0.05 }
        let d = GaitMath.displacement(a.map { $0 - 0.05 }, rateHz: rate, cutoffHz: 0.4)
        let middle = d[400..<800]
        XCTAssertEqual(middle.max()! - middle.min()!, 2 * amplitude, accuracy: 0.002)
    }

    /// A device at the waist bouncing 4 cm a step at 1.8 steps a second: the recorder's bout says so.
    private func walk(placement: Placement) -> (GaitRecorder, start: Double, end: Double) {
        var configuration = GaitRecorder.Configuration()
        configuration.placement = placement
        configuration.heightMeters = 1.70
        var recorder = GaitRecorder(configuration: configuration)
        let rate = 60.0, stepHz = 1.8, w = 2 * Double.pi * stepHz, amplitude = 0.02
        // A step at each crest of the bounce's period (the detector's instants are a fixed phase of the cycle).
        let stepTimes = (0..<Int(30 * stepHz)).map { 105 + Double($0) / stepHz }
        var next = 0
        for i in 0..<(60 * 40) {
            let t = 100 + Double(i) / rate
            let vertical = t > 105 && t < 135 ? -amplitude * w * w * sin(w * (t - 105)) : 0
            // Tilted: gravity along y and z, the bounce along it.
            let g = standardGravity + vertical
            recorder.add(Sample(time: t, x: 0, y: g * 0.6, z: g * 0.8))
            while next < stepTimes.count && stepTimes[next] <= t {
                recorder.step(at: stepTimes[next])
                next += 1
            }
        }
        return (recorder, stepTimes.first!, stepTimes.last!)
    }

    func testRecorderMeasuresAWaistWalk() throws {
        let (recorder, start, end) = walk(placement: .waist)
        let gait = recorder.measures(from: start, to: end)
        XCTAssertEqual(try XCTUnwrap(gait.strideTimeSeconds), 2 / 1.8, accuracy: 0.02)
        XCTAssertLessThan(try XCTUnwrap(gait.strideTimeCV), 0.02)
        XCTAssertGreaterThan(try XCTUnwrap(gait.regularity), 0.95)
        XCTAssertEqual(try XCTUnwrap(gait.symmetry), 1, accuracy: 0.05)
        let expected = 1.25 * 2 * (2 * 0.53 * 1.70 * 0.04 - 0.04 * 0.04).squareRoot()
        XCTAssertEqual(try XCTUnwrap(gait.stepLengthMeters), expected, accuracy: 0.03 * expected)
        XCTAssertEqual(try XCTUnwrap(gait.speedMetersPerSecond), expected * 1.8, accuracy: 0.03 * expected * 1.8)
    }

    func testRecorderGivesNoLengthAwayFromTheWaist() throws {
        for placement in [Placement.auto, .wrist, .pocket, .hand, .bag] {
            let (recorder, start, end) = walk(placement: placement)
            let gait = recorder.measures(from: start, to: end)
            XCTAssertNotNil(gait.strideTimeSeconds, "\(placement)")
            XCTAssertNotNil(gait.regularity, "\(placement)")
            XCTAssertNil(gait.stepLengthMeters, "\(placement)")
            XCTAssertNil(gait.speedMetersPerSecond, "\(placement)")
        }
    }

    func testRoundedAsEveryOutputGivesIt() {
        let gait = GaitMeasures(strideTimeSeconds: 1.12345, strideTimeCV: 0.03456, regularity: 0.77777, symmetry: 1.04449,
                                stepLengthMeters: 0.6151, speedMetersPerSecond: 1.1849).rounded()
        XCTAssertEqual(gait, GaitMeasures(strideTimeSeconds: 1.123, strideTimeCV: 0.035, regularity: 0.778, symmetry: 1.044,
                                          stepLengthMeters: 0.62, speedMetersPerSecond: 1.18))
    }

    func testStepRingKeepsOrderAndForgetsTheOldest() {
        var configuration = GaitRecorder.Configuration()
        configuration.stepCapacity = 8
        var recorder = GaitRecorder(configuration: configuration)
        for t in [1.0, 2.0, 4.0, 3.0] { recorder.step(at: t) }
        XCTAssertEqual(recorder.stepTimes(from: 0, to: 10), [1, 2, 3, 4])
        for t in 5...12 { recorder.step(at: Double(t)) }
        XCTAssertEqual(recorder.stepTimes(from: 0, to: 100), (5...12).map(Double.init))
    }
}
