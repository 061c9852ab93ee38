import StepProcessing
import XCTest

/// The scans a device's buffer lost, from its time stamps alone: an overrun's gap counts, late scans that
/// make their gap up do not, and neither does a clock's drift or jitter.
final class SampleGapCounterTests: XCTestCase {
    private func feed(_ counter: inout SampleGapCounter, _ times: [Double]) -> Int {
        times.reduce(0) { $0 + (counter.add(time: $1)?.scans ?? 0) }
    }

    private func even(from start: Double, count: Int, period: Double = 0.01) -> [Double] {
        (0..<count).map { start + Double($0) * period }
    }

    func testAnEvenStreamWithJitterAndDriftLosesNothing() {
        var counter = SampleGapCounter(rateHz: 100)
        // ±0.15 of a period of jitter each way (intervals ±0.3), on a clock 3 % slow: 60 s.
        let times = (0..<6000).map { Double($0) * 0.0103 + 0.0015 * sin(Double($0) * 2.3) }
        XCTAssertEqual(feed(&counter, times), 0)
        XCTAssertEqual(counter.lost, 0)
    }

    func testAnOverrunsGapIsCountedOnceTheDeviceKeepsItsPace() {
        var counter = SampleGapCounter(rateHz: 100)
        var times = even(from: 0, count: 300)
        // The buffer stayed full for 1.5 s: 150 scans never stored, then the stream goes on evenly.
        times += even(from: 2.99 + 1.51, count: 100)
        XCTAssertEqual(feed(&counter, times), 0, "not yet: late scans could still make the gap up")
        var found: [SampleGapCounter.Loss] = []
        for t in even(from: 5.5, count: 200) { counter.add(time: t).map { found.append($0) } }
        XCTAssertEqual(found.map(\.scans), [150])
        XCTAssertEqual(found.first?.from ?? 0, 2.99, accuracy: 1e-9, "the last stamp before the gap")
        XCTAssertEqual(found.first?.to ?? 0, 4.5, accuracy: 1e-9, "the first after it")
        XCTAssertEqual(counter.lost, 150)
        XCTAssertEqual(feed(&counter, even(from: 7.5, count: 500)), 0, "counted once")
    }

    func testLateScansThatMakeTheirGapUpAreNotLost() {
        var counter = SampleGapCounter(rateHz: 100)
        var times = even(from: 0, count: 300)
        // A starved producer: nothing for 0.81 s (80 scans owed), then the scan that ends the gap and the 80
        // late ones in a burst, 0.5 ms apart.
        times += even(from: 2.99 + 0.81, count: 81, period: 0.0005)
        times += even(from: times.last! + 0.01, count: 500)
        XCTAssertEqual(feed(&counter, times), 0)
        XCTAssertEqual(counter.lost, 0)
    }

    func testAGapMadeUpInPartCountsTheRest() {
        var counter = SampleGapCounter(rateHz: 100)
        var times = even(from: 0, count: 100)
        times += even(from: 0.99 + 1.01, count: 40, period: 0.001)   // 100 owed; after the gap's scan, 39 came late
        times += even(from: times.last! + 0.01, count: 400)
        XCTAssertEqual(feed(&counter, times), 61)
    }

    func testABufferMadeAgainIsNotAGapOfTheDevice() {
        var counter = SampleGapCounter(rateHz: 100)
        XCTAssertEqual(feed(&counter, even(from: 0, count: 100)), 0)
        XCTAssertNil(counter.restart())
        XCTAssertEqual(feed(&counter, even(from: 1.5, count: 500)), 0)
        XCTAssertEqual(counter.lost, 0)
    }

    func testAClockResetIsNotAnHourOfLostScans() {
        var counter = SampleGapCounter(rateHz: 100)
        var times = even(from: 0, count: 100)
        times += even(from: 1e6, count: 500)
        XCTAssertLessThanOrEqual(feed(&counter, times), 360_000)
        var back = SampleGapCounter(rateHz: 100)
        XCTAssertEqual(feed(&back, even(from: 100, count: 100) + even(from: 0, count: 500)), 0, "a clock stepped back")
    }
}
