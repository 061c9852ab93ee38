import Foundation
import StepProcessing
import XCTest

/// LocalZone draws days, hours and minutes from a zone's offsets alone; Foundation's Calendar, which the daemon
/// used before, is the reference: the same intervals in zones with clock changes at 02:00, at midnight (the
/// day starts at 01:00), at half and quarter hours, and on the day Samoa skipped.
final class LocalZoneTests: XCTestCase {
    private let zones = ["UTC", "Europe/Berlin", "America/Santiago", "America/Havana", "Asia/Kolkata",
                         "Asia/Kathmandu", "Australia/Lord_Howe", "America/St_Johns", "Pacific/Apia", "Pacific/Chatham"]

    private func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// Every hour of 2011 to 2012 (Samoa's skipped 30 December 2011) and of 2026, and the seconds either side
    /// of each clock change in them.
    private func instants(_ zone: TimeZone) -> [Date] {
        var instants: [Date] = []
        for (from, to) in [(1_293_840_000, 1_356_998_400), (1_767_225_600, 1_798_761_600)] {
            var t = from
            while t < to {
                instants.append(Date(timeIntervalSince1970: Double(t) + 1_800.5))
                t += 3_600
            }
            var cursor = Date(timeIntervalSince1970: Double(from))
            while let change = zone.nextDaylightSavingTimeTransition(after: cursor), change.timeIntervalSince1970 < Double(to) {
                instants += [change.addingTimeInterval(-1), change, change.addingTimeInterval(1)]
                cursor = change
            }
        }
        return instants
    }

    func testDaysAreCalendarsDaysInEveryZone() {
        for name in zones {
            let zone = TimeZone(identifier: name)!
            let local = LocalZone(zone)
            let calendar = calendar(zone)
            for instant in instants(zone) {
                let expected = calendar.dateInterval(of: .day, for: instant)!
                let drawn = local.interval(of: .day, containing: instant)
                guard drawn == expected else {
                    return XCTFail("\(name) at \(instant): \(drawn) against Calendar's \(expected)")
                }
            }
        }
    }

    /// Where the clocks change on a whole local hour. Where they change elsewhere (Lord Howe's half hour at
    /// 02:00, St John's 00:01 in 2011, Chatham's 02:45) Calendar's hour of the change straddles it; LocalZone's
    /// hours are the local clock's, cut where the offset changes (below).
    func testHoursAreCalendarsHoursWhereClocksChangeOnTheHour() {
        let odd: Set = ["Australia/Lord_Howe", "America/St_Johns", "Pacific/Chatham"]
        for name in zones where !odd.contains(name) {
            let zone = TimeZone(identifier: name)!
            let local = LocalZone(zone)
            let calendar = calendar(zone)
            for instant in instants(zone) {
                let expected = calendar.dateInterval(of: .hour, for: instant)!
                let drawn = local.interval(of: .hour, containing: instant)
                guard drawn == expected else {
                    return XCTFail("\(name) at \(instant): \(drawn) against Calendar's \(expected)")
                }
            }
        }
    }

    /// The day the clocks go forward at midnight in Santiago starts at 01:00, 23 hours long; Berlin's autumn
    /// day has 25 hours.
    func testADayWhoseMidnightIsSkippedStartsAtTheChange() {
        let santiago = LocalZone(TimeZone(identifier: "America/Santiago")!)
        // 2026-09-06: at 00:00 -04 the clocks go to 01:00 -03 (04:00 UTC).
        let day = santiago.interval(of: .day, containing: Date(timeIntervalSince1970: 1_788_696_000))  // 12:00 UTC
        XCTAssertEqual(day.start.timeIntervalSince1970, 1_788_667_200, "04:00 UTC, 01:00 local")
        XCTAssertEqual(day.duration, 23 * 3_600)
        let berlin = LocalZone(TimeZone(identifier: "Europe/Berlin")!)
        XCTAssertEqual(berlin.interval(of: .day, containing: Date(timeIntervalSince1970: 1_792_929_600)).duration,
                       25 * 3_600, "2026-10-25")
    }

    func testAnHourCutShortByAHalfHourChangeKeepsItsOwnHalf() {
        let lordHowe = LocalZone(TimeZone(identifier: "Australia/Lord_Howe")!)
        // 2011-10-02 02:00 +10:30 became 02:30 +11:00, at 15:30 UTC on 1 October.
        let hour = lordHowe.interval(of: .hour, containing: Date(timeIntervalSince1970: 1_317_483_000.5))
        XCTAssertEqual(hour.start.timeIntervalSince1970, 1_317_483_000, "15:30 UTC, 02:30 local")
        XCTAssertEqual(hour.end.timeIntervalSince1970, 1_317_484_800, "16:00 UTC, 03:00 local")
        let before = lordHowe.interval(of: .hour, containing: Date(timeIntervalSince1970: 1_317_482_999))
        XCTAssertEqual(before.start.timeIntervalSince1970, 1_317_479_400, "14:30 UTC, 01:00 local")
        XCTAssertEqual(before.end.timeIntervalSince1970, 1_317_483_000)
    }

    func testFixedOffsetsAreNamedAsGMTOffsets() {
        XCTAssertEqual(LocalZone.fixed(secondsFromGMT: 19_800).identifier, "GMT+0530")
        XCTAssertEqual(LocalZone.fixed(secondsFromGMT: -15_900).identifier, "GMT-0425")
        let kolkata = LocalZone.fixed(secondsFromGMT: 19_800)
        let noon = Date(timeIntervalSince1970: 1_768_478_400)   // 2026-01-15T12:00:00Z, 17:30 there
        XCTAssertEqual(kolkata.startOfDay(for: noon).timeIntervalSince1970, 1_768_478_400 - 17.5 * 3_600)
        XCTAssertEqual(kolkata.interval(of: .hour, containing: noon).start.timeIntervalSince1970, 1_768_478_400 - 1_800)
        XCTAssertEqual(kolkata.interval(of: .minute, containing: noon.addingTimeInterval(61.5)).start.timeIntervalSince1970,
                       1_768_478_460)
    }

    /// Before 1970 and far ahead: the arithmetic rounds towards the past on both sides of zero.
    func testInstantsBeforeNineteenSeventyRoundDown() {
        let utc = LocalZone.utc
        let day = utc.interval(of: .day, containing: Date(timeIntervalSince1970: -1.5))
        XCTAssertEqual(day.start.timeIntervalSince1970, -86_400)
        XCTAssertEqual(day.end.timeIntervalSince1970, 0)
    }
}
