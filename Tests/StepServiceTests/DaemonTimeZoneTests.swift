import Foundation
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import XCTest

/// $TZ as the C library reads it. Before, `TimeZone.current` took `GMT+4:25` with the wrong sign and made
/// `IST-5:30`, `:Europe/Berlin` and `CET-1CEST,M3.5.0,M10.5.0/3` UTC, so "today" began at the wrong hour.
final class DaemonTimeZoneTests: XCTestCase {
    private var saved: String?

    override func setUp() { saved = ProcessInfo.processInfo.environment["TZ"] }

    override func tearDown() {
        if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
        tzset()
    }

    private func resolve(_ tz: String) -> DaemonTimeZone.Resolution {
        setenv("TZ", tz, 1)
        return DaemonTimeZone.resolve(tz)
    }

    func testPOSIXOffsetsKeepTheirSignAndMinutes() {
        XCTAssertEqual(resolve("GMT+4:25").zone.secondsFromGMT(), -(4 * 3600 + 25 * 60), "west of Greenwich")
        XCTAssertEqual(resolve("IST-5:30").zone.secondsFromGMT(), 5 * 3600 + 30 * 60)
        XCTAssertNil(resolve("IST-5:30").warning)
    }

    func testColonAreaCityAndZoneinfoPathsAreIANAZones() {
        XCTAssertEqual(resolve(":Europe/Berlin").zone.identifier, "Europe/Berlin")
        XCTAssertEqual(resolve(":/usr/share/zoneinfo/Asia/Kolkata").zone.identifier, "Asia/Kolkata")
        XCTAssertEqual(resolve("America/New_York").zone.identifier, "America/New_York")
    }

    /// A midnight drawn in the zone: the start of "today" at 12:00 UTC on 2026-01-15.
    func testTodayStartsAtTheZonesMidnight() {
        var calendar = Calendar(identifier: .gregorian)
        let noon = Date(timeIntervalSince1970: 1_768_478_400)   // 2026-01-15T12:00:00Z
        calendar.timeZone = resolve("IST-5:30").zone
        XCTAssertEqual(calendar.startOfDay(for: noon).timeIntervalSince1970, 1_768_478_400 - 17.5 * 3600, "17:30 in India: midnight was 17 h 30 min before")
        calendar.timeZone = resolve(":Europe/Berlin").zone
        XCTAssertEqual(calendar.startOfDay(for: noon).timeIntervalSince1970, 1_768_478_400 - 13 * 3600)
    }

    /// DST rules of its own follow the C library through the year: the zone's offset is localtime_r's at every
    /// hour of two years, and midnight on a summer day and a winter day is the local one (the offset at start,
    /// kept all year, would begin "today" an hour off after the clocks change).
    func testRulesOfItsOwnFollowTheCLibrarysChanges() {
        let resolution = resolve("CET-1CEST,M3.5.0,M10.5.0/3")
        XCTAssertNil(resolution.warning)
        XCTAssertNotNil(resolution.notice)
        let zone = resolution.zone
        var instant = Int(time(nil)) - 365 * 86_400
        for _ in 0..<(2 * 365 * 24) {
            var t = time_t(instant)
            var local = tm()
            localtime_r(&t, &local)
            guard zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))) == local.tm_gmtoff else {
                return XCTFail("\(zone.identifier) differs from the C library at \(instant)")
            }
            instant += 3600
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let julyNoon = Date(timeIntervalSince1970: 1_784_203_200)   // 2026-07-16T12:00:00Z, CEST
        XCTAssertEqual(calendar.startOfDay(for: julyNoon).timeIntervalSince1970, 1_784_203_200 - 14 * 3600)
        let januaryNoon = Date(timeIntervalSince1970: 1_768_478_400)   // 2026-01-15T12:00:00Z, CET
        XCTAssertEqual(calendar.startOfDay(for: januaryNoon).timeIntervalSince1970, 1_768_478_400 - 13 * 3600)
        // Southern rules (Chile-like, summer in January) are followed too.
        let south = resolve("AEST-10AEDT,M10.1.0,M4.1.0/3").zone
        XCTAssertEqual(south.secondsFromGMT(for: januaryNoon), 11 * 3600)
        XCTAssertEqual(south.secondsFromGMT(for: julyNoon), 10 * 3600)
    }

    /// Rules no zone shares: the offset the C library gives now, and a warning that says so (never UTC silently).
    func testRulesNoZoneSharesTakeTheCLibrarysOffsetNowAndWarn() {
        let resolution = resolve("ABC-3XYZ,M1.1.0,M2.1.0")
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        XCTAssertEqual(resolution.zone.secondsFromGMT(), local.tm_gmtoff)
        XCTAssertTrue(resolution.warning?.contains("daylight-saving rules no known zone shares") ?? false)
    }
}
