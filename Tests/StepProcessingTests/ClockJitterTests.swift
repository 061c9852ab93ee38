import StepProcessing
import XCTest

/// `stepd bench --jitter-ms`: timestamps moved within their bound, in order, the same for a seed and a trace.
final class ClockJitterTests: XCTestCase {
    private func samples(_ times: [Double]) -> [Sample] {
        times.map { Sample(time: $0, x: 0, y: 0, z: 9.81) }
    }

    private func jittered(_ times: [Double], ms: Double = 3, seed: UInt64 = 1, trace: String = "set/walk", chunk: Int = 7) -> [Double] {
        var jitter = ClockJitter(milliseconds: ms, seed: seed, trace: trace)
        var out: [Double] = []
        var start = 0
        while start < times.count {   // in chunks, as the reader hands them over
            var part = samples(Array(times[start..<min(start + chunk, times.count)]))
            jitter.apply(&part)
            out += part.map(\.time)
            start += chunk
        }
        return out
    }

    func testEveryTimestampMovesWithinItsBoundAndStaysInOrder() {
        let times = (0..<2000).map { Double($0) * 0.01 }
        let moved = jittered(times)
        XCTAssertEqual(moved.count, times.count)
        let shifts = zip(moved, times).map { $0 - $1 }
        XCTAssertLessThanOrEqual(shifts.map(abs).max()!, 0.003 + 1e-12)
        XCTAssertGreaterThan(shifts.map(abs).max()!, 0.0025, "the draws reach towards the bound")
        XCTAssertEqual(shifts.reduce(0, +) / Double(shifts.count), 0, accuracy: 0.0002, "centred on the true instant")
        XCTAssertTrue(zip(moved, moved.dropFirst()).allSatisfy { $0 < $1 })
    }

    func testAJitterWiderThanTheSpacingNeverReordersRows() {
        let times = (0..<500).map { Double($0) * 0.005 }   // 200 Hz, ±8 ms
        let moved = jittered(times, ms: 8)
        XCTAssertTrue(zip(moved, moved.dropFirst()).allSatisfy { $1 - $0 >= 0.0005 - 1e-12 }, "at least a tenth of the spacing apart")
    }

    func testTheSameSeedAndTraceDrawTheSameWhateverTheChunks() {
        let times = (0..<300).map { Double($0) * 0.01 }
        XCTAssertEqual(jittered(times, chunk: 7), jittered(times, chunk: 300))
        XCTAssertNotEqual(jittered(times, seed: 1), jittered(times, seed: 2))
        XCTAssertNotEqual(jittered(times, trace: "set/walk"), jittered(times, trace: "set/other"))
    }

    func testNoJitterLeavesTheRecordingAsItIs() {
        let times = [0, 0.01, 0.01, 0.005, 0.03]
        XCTAssertEqual(jittered(times, ms: 0), times)
    }

    func testARepeatedOrBackwardTimeKeepsItsOffsetFromTheRowBefore() {
        let moved = jittered([0, 0.01, 0.01, 0.02, 0.015, 0.03], seed: 7)
        XCTAssertEqual(moved[2], moved[1], "repeated")
        XCTAssertEqual(moved[4] - moved[3], -0.005, accuracy: 1e-12, "behind by what it was behind")
        XCTAssertGreaterThan(moved[5], moved[4])
    }
}
