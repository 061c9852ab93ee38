import Foundation
import StepProcessing
import XCTest

/// Today's figures: a day is local midnight to midnight in the calendar given, steps either side of midnight go
/// to their own day, and a zone change moves midnight.
final class DayCounterTests: XCTestCase {
    /// Foundation's rules for the zone, behind the LocalZone the daemon's code takes.
    private func calendar(_ zone: String) -> LocalZone { LocalZone(TimeZone(identifier: zone)!) }

    /// 2026-11-26T00:00:00+01:00 (Berlin, winter).
    private let berlinMidnight = Date(timeIntervalSince1970: 1_795_647_600)

    func testDayIsLocalMidnightToMidnight() {
        let berlin = calendar("Europe/Berlin")
        let counter = DayCounter(now: berlinMidnight.addingTimeInterval(13 * 3600), zone: berlin)
        XCTAssertEqual(counter.today.start, berlinMidnight)
        XCTAssertEqual(counter.today.end, berlinMidnight.addingTimeInterval(86_400))
        XCTAssertEqual(counter.today.zone.identifier, "Europe/Berlin")
    }

    func testStepsBeforeMidnightStayWithYesterdayWhileWalkingAcrossIt() {
        let berlin = calendar("Europe/Berlin")
        var counter = DayCounter(now: berlinMidnight.addingTimeInterval(-30), zone: berlin)
        for i in 0..<40 { counter.step(at: berlinMidnight.addingTimeInterval(-10 + Double(i) * 0.5), distanceMeters: 0.7) }
        // 20 steps before midnight (yesterday's, counted then), 20 after (today's, which began with the first).
        XCTAssertEqual(counter.today.start, berlinMidnight)
        XCTAssertEqual(counter.today.steps, 20)
        XCTAssertEqual(counter.today.distanceMeters, 14, accuracy: 1e-9)
        // A step the detector reports late, timed before midnight, arrives after the day began: not today's.
        counter.advance(to: berlinMidnight.addingTimeInterval(6), zone: berlin)
        counter.step(at: berlinMidnight.addingTimeInterval(-0.2), distanceMeters: 0.7)
        XCTAssertEqual(counter.today.steps, 20)
    }

    func testMidnightWithoutStepsStartsTheDayAtZero() {
        let berlin = calendar("Europe/Berlin")
        var counter = DayCounter(now: berlinMidnight.addingTimeInterval(-3600), zone: berlin)
        for i in 0..<40 { counter.step(at: berlinMidnight.addingTimeInterval(-3000 + Double(i)), distanceMeters: 0.7) }
        counter.floors(ascended: 2, descended: 1, at: berlinMidnight.addingTimeInterval(-2900))
        XCTAssertEqual(counter.today.steps, 40)
        XCTAssertEqual(counter.today.activeMinutes, 1)
        XCTAssertFalse(counter.advance(to: berlinMidnight.addingTimeInterval(-1), zone: berlin))
        XCTAssertTrue(counter.advance(to: berlinMidnight, zone: berlin))
        XCTAssertEqual(counter.today.steps, 0)
        XCTAssertEqual(counter.today.distanceMeters, 0)
        XCTAssertEqual(counter.today.floorsAscended, 0)
        XCTAssertEqual(counter.today.floorsDescended, 0)
        XCTAssertEqual(counter.today.activeMinutes, 0)
    }

    func testAZoneChangeMovesMidnight() {
        // 13:00 in Berlin is 21:00 in Tokyo the same day: a day whose midnight was 8 hours earlier.
        let now = berlinMidnight.addingTimeInterval(13 * 3600)
        var counter = DayCounter(now: now, zone: calendar("Europe/Berlin"))
        counter.step(at: now, distanceMeters: 0.7)
        XCTAssertTrue(counter.advance(to: now, zone: calendar("Asia/Tokyo")))
        XCTAssertEqual(counter.today.start, berlinMidnight.addingTimeInterval(-8 * 3600))
        XCTAssertEqual(counter.today.steps, 0)
        // Another name for the same offset keeps the day and its steps.
        counter.step(at: now, distanceMeters: 0.7)
        XCTAssertFalse(counter.advance(to: now, zone: calendar("Asia/Seoul")))
        XCTAssertEqual(counter.today.steps, 1)
    }

    func testDaylightSavingDayIsTwentyThreeHours() {
        // 2026-03-29 in Berlin: clocks go from 02:00 to 03:00.
        let start = Date(timeIntervalSince1970: 1_774_738_800)  // 2026-03-29T00:00:00+01:00
        let counter = DayCounter(now: start.addingTimeInterval(12 * 3600), zone: calendar("Europe/Berlin"))
        XCTAssertEqual(counter.today.start, start)
        XCTAssertEqual(counter.today.end.timeIntervalSince(counter.today.start), 23 * 3600)
    }

    func testRestoreTakesTodaysMinutesOnly() {
        let berlin = calendar("Europe/Berlin")
        var counter = DayCounter(now: berlinMidnight.addingTimeInterval(600), zone: berlin)
        counter.restore([
            .init(start: berlinMidnight.addingTimeInterval(-60), steps: 50, distanceMeters: 35, floorsAscended: 1),
            .init(start: berlinMidnight, steps: 80, distanceMeters: 56, floorsAscended: 2),
            .init(start: berlinMidnight.addingTimeInterval(60), steps: 10, distanceMeters: 7, floorsAscended: nil),
        ], floorsDescended: 3)
        XCTAssertEqual(counter.today.steps, 90)
        XCTAssertEqual(counter.today.distanceMeters, 63, accuracy: 1e-9)
        XCTAssertEqual(counter.today.floorsAscended, 2)
        XCTAssertEqual(counter.today.floorsDescended, 3)
        XCTAssertEqual(counter.today.activeMinutes, 1)
        // Live steps in a restored minute add to it.
        for i in 0..<25 { counter.step(at: berlinMidnight.addingTimeInterval(61 + Double(i)), distanceMeters: 0.7) }
        XCTAssertEqual(counter.today.steps, 115)
        XCTAssertEqual(counter.today.activeMinutes, 2)
    }
}
