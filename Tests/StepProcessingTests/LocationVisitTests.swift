import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

final class LocationVisitTests: XCTestCase {
    /// Walk 200 m east at 1.4 m/s, stay `staySeconds` with ±1 m jitter, walk 200 m on; one fix a second.
    private func walkStayWalk(staySeconds: Int) -> (fixes: [Fix], arrival: Double, departure: Double) {
        var fixes: [Fix] = []
        var rng = SplitMix(seed: 3)
        var second = 0.0
        for i in 0...143 {  // 0 ... 200.2 m clamped to 200 m
            fixes.append(FixFactory.fix(second: second, east: min(200, Double(i) * 1.4)))
            second += 1
        }
        let arrival = second - 1
        for _ in 0..<staySeconds {
            fixes.append(FixFactory.fix(second: second, east: 200 + rng.uniform(-1, 1), north: rng.uniform(-1, 1)))
            second += 1
        }
        let departure = second - 1
        for i in 1...143 {
            fixes.append(FixFactory.fix(second: second, east: 200 + Double(i) * 1.4))
            second += 1
        }
        return (fixes, arrival, departure)
    }

    func testTenMinuteStayYieldsOneVisitWithArrivalAndDepartureWithinTwoFixes() {
        let (fixes, arrival, departure) = walkStayWalk(staySeconds: 600)
        var detector = VisitDetector()
        var events: [VisitDetector.Event] = []
        for fix in fixes { events += detector.add(fix) }
        XCTAssertEqual(events.count, 2)
        guard case .began(let began)? = events.first, case .ended(let ended)? = events.last else {
            return XCTFail("expected a visit that began then ended, got \(events)")
        }
        XCTAssertNil(began.departure)
        XCTAssertEqual(began.arrival.timeIntervalSince(FixFactory.t0), arrival, accuracy: 2)
        XCTAssertEqual(ended.arrival, began.arrival)
        XCTAssertEqual(ended.departure!.timeIntervalSince(FixFactory.t0), departure, accuracy: 2)
        let centre = Geodesy.offsetMeters(of: ended.center, from: FixFactory.origin)
        XCTAssertEqual(centre.east, 200, accuracy: 1)
        XCTAssertEqual(centre.north, 0, accuracy: 1)
        XCTAssertEqual(detector.visits.count, 1)
        XCTAssertNil(detector.current)
    }

    func testVisitBeginsOnceTheStayReachesTheMinimum() {
        let (fixes, arrival, _) = walkStayWalk(staySeconds: 600)
        var detector = VisitDetector()
        for fix in fixes {
            if case .began? = detector.add(fix).first {
                let at = fix.time!.timeIntervalSince(FixFactory.t0)
                XCTAssertEqual(at - arrival, 300, accuracy: 2)
                return
            }
        }
        XCTFail("no visit began")
    }

    func testStayShorterThanTheMinimumIsNoVisit() {
        let (fixes, _, _) = walkStayWalk(staySeconds: 240)
        var detector = VisitDetector()
        for fix in fixes { XCTAssertEqual(detector.add(fix), []) }
        XCTAssertTrue(detector.visits.isEmpty)
    }

    func testGapWithoutFixesInsideAStayKeepsOneVisit() {
        var (fixes, _, _) = walkStayWalk(staySeconds: 900)
        // Indoors: no fix for five minutes in the middle of the stay.
        fixes.removeSubrange(144 + 300..<144 + 600)
        var detector = VisitDetector()
        var events: [VisitDetector.Event] = []
        for fix in fixes { events += detector.add(fix) }
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(detector.visits.count, 1)
    }

    func testConfiguredRadiusAndMinimumStayApply() {
        var configuration = VisitDetector.Configuration()
        configuration.minimumStaySeconds = 60
        configuration.radiusMeters = 20
        var detector = VisitDetector(configuration: configuration)
        var events: [VisitDetector.Event] = []
        for i in 0..<90 { events += detector.add(FixFactory.fix(second: Double(i))) }
        for i in 1...30 { events += detector.add(FixFactory.fix(second: 89 + Double(i), east: Double(i) * 1.4)) }
        XCTAssertEqual(events.count, 2)
        if case .ended(let v)? = events.last {
            XCTAssertEqual(v.departure!.timeIntervalSince(FixFactory.t0), 89, accuracy: 2)
        } else {
            XCTFail("no visit ended")
        }
    }
}

final class LocationVisitMemoryTests: XCTestCase {
    func testLongStayKeepsBoundedFixesAndStillEndsAtTheRightTime() {
        var configuration = VisitDetector.Configuration()
        configuration.maximumCandidateFixes = 1000
        var detector = VisitDetector(configuration: configuration)
        var events: [VisitDetector.Event] = []
        for i in 0..<5000 { events += detector.add(FixFactory.fix(second: Double(i), east: Double(i % 3) * 0.5)) }
        for i in 1...100 { events += detector.add(FixFactory.fix(second: 4999 + Double(i), east: Double(i) * 1.4)) }
        XCTAssertEqual(events.count, 2)
        guard case .ended(let v)? = events.last else { return XCTFail("no visit ended") }
        XCTAssertEqual(v.arrival, FixFactory.t0)
        XCTAssertEqual(v.departure!.timeIntervalSince(FixFactory.t0), 4999, accuracy: 2)
    }
}
