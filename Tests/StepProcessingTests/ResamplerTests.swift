import XCTest
@testable import StepProcessing
import TestSupport

final class ResamplerTests: XCTestCase {
    /// Irregular timestamps, as from real hardware: jittered intervals around 5 ms.
    private func irregularRamp(count: Int, seed: UInt64 = 42) -> [Sample] {
        var generator = SplitMix(seed: seed)
        var t = 10.0
        return (0..<count).map { _ in
            t += 0.002 + 0.006 * generator.nextUnit()
            return Sample(time: t, x: 3 * t, y: -t + 1, z: 9.81)
        }
    }

    func testLinearSignalIsReproducedExactlyOnTheGrid() {
        var resampler = Resampler(rateHz: 60)
        var out: [Sample] = []
        for s in irregularRamp(count: 2000) { resampler.push(s) { out.append($0) } }
        XCTAssertGreaterThan(out.count, 100)
        for (i, s) in out.enumerated() {
            XCTAssertEqual(s.time, out[0].time + Double(i) / 60, accuracy: 1e-9)
            XCTAssertEqual(s.acceleration.x, 3 * s.time, accuracy: 1e-9)
            XCTAssertEqual(s.acceleration.y, -s.time + 1, accuracy: 1e-9)
            XCTAssertEqual(s.acceleration.z, 9.81, accuracy: 1e-12)
        }
    }

    func testOutputRateIsSixtyHertzWhateverTheInputRate() {
        for inputRate in [25.0, 62.5, 100, 400] {
            var resampler = Resampler(rateHz: 60)
            var count = 0
            for n in 0..<Int(inputRate * 10) {
                resampler.push(Sample(time: Double(n) / inputRate, x: 0, y: 0, z: 1)) { _ in count += 1 }
            }
            // Ten seconds less one input interval, at 60 Hz, plus the first sample.
            let expected = Int(((10 - 1 / inputRate) * 60).rounded(.down)) + 1
            XCTAssertEqual(count, expected, "input at \(inputRate) Hz")
        }
    }

    func testBatchingDoesNotChangeTheOutput() {
        let input = irregularRamp(count: 500)
        var whole = Resampler(), split = Resampler()
        var a: [Sample] = [], b: [Sample] = []
        for s in input { whole.push(s) { a.append($0) } }
        for chunk in stride(from: 0, to: input.count, by: 7) {
            for s in input[chunk..<min(chunk + 7, input.count)] { split.push(s) { b.append($0) } }
        }
        XCTAssertEqual(a, b)
    }

    func testGapRestartsTheGridInsteadOfInventingSamples() {
        var resampler = Resampler(rateHz: 60, maximumGapSeconds: 0.5)
        var out: [Sample] = []
        for n in 0..<60 { resampler.push(Sample(time: Double(n) / 60, x: 1, y: 0, z: 0)) { out.append($0) } }
        let before = out.count
        resampler.push(Sample(time: 5.0, x: 2, y: 0, z: 0)) { out.append($0) }
        XCTAssertEqual(out.count, before + 1, "only the sample after the gap, no interpolated ones")
        XCTAssertEqual(out.last?.time, 5.0)
        XCTAssertEqual(resampler.restarts, 1)
    }

    func testRepeatedAndBackwardTimestampsAreHandled() {
        var resampler = Resampler(rateHz: 60)
        var out: [Sample] = []
        resampler.push(Sample(time: 1, x: 0, y: 0, z: 0)) { out.append($0) }
        resampler.push(Sample(time: 1, x: 5, y: 0, z: 0)) { out.append($0) }
        XCTAssertEqual(out.count, 1)
        // Back in time: held until the next sample says whether the clock went back.
        resampler.push(Sample(time: 0.5, x: 0, y: 0, z: 0)) { out.append($0) }
        XCTAssertEqual(out.count, 1)
        resampler.push(Sample(time: 0.6, x: 0, y: 0, z: 0)) { out.append($0) }
        XCTAssertEqual(out.dropFirst().first?.time, 0.5, "the grid restarts at the held sample")
        XCTAssertEqual(resampler.restarts, 1)
    }

    /// A single row out of order (a recorder's glitch) is dropped: the grid goes on as if it were not there.
    /// Before, the grid restarted at it and again at the row after, with the glitch's values in the output.
    func testASingleBackwardsSampleIsDroppedAndTheGridGoesOn() {
        var clean = Resampler(rateHz: 60), glitched = Resampler(rateHz: 60)
        var a: [Sample] = [], b: [Sample] = []
        for n in 0..<100 {
            let sample = Sample(time: Double(n) / 100, x: Double(n % 7), y: 0, z: 9.8)
            clean.push(sample) { a.append($0) }
            glitched.push(sample) { b.append($0) }
            if n == 50 { glitched.push(Sample(time: -5000, x: 0, y: 0, z: 9.8)) { b.append($0) } }
        }
        XCTAssertEqual(a, b)
        XCTAssertEqual(glitched.restarts, 0)
    }
}
