import Foundation
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import XCTest

/// $TZ as the C library reads it. Before, `TimeZone.current` took `GMT+4:25` with the wrong sign and made
/// `IST-5:30`, `:Europe/Berlin` and `CET-1CEST,M3.5.0,M10.5.0/3` UTC, so "today" began at the wrong hour; now
/// the daemon's zone is the C library's own (localtime_r), so every TZ it reads is followed exactly.
final class DaemonTimeZoneTests: XCTestCase {
    private var saved: String?
    private let januaryNoon = Date(timeIntervalSince1970: 1_768_478_400)   // 2026-01-15T12:00:00Z
    private let julyNoon = Date(timeIntervalSince1970: 1_784_203_200)      // 2026-07-16T12:00:00Z

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
        let west = resolve("GMT+4:25")
        XCTAssertEqual(west.zone.secondsFromGMT(for: januaryNoon), -(4 * 3600 + 25 * 60), "west of Greenwich")
        XCTAssertEqual(west.zone.identifier, "GMT-0425")
        let india = resolve("IST-5:30")
        XCTAssertEqual(india.zone.secondsFromGMT(for: julyNoon), 5 * 3600 + 30 * 60)
        XCTAssertEqual(india.zone.identifier, "GMT+0530")
        XCTAssertNil(india.warning)
    }

    func testColonAreaCityAndZoneinfoPathsAreIANAZones() {
        XCTAssertEqual(resolve(":Europe/Berlin").zone.identifier, "Europe/Berlin")
        XCTAssertEqual(resolve(":/usr/share/zoneinfo/Asia/Kolkata").zone.identifier, "Asia/Kolkata")
        let newYork = resolve("America/New_York")
        XCTAssertEqual(newYork.zone.identifier, "America/New_York")
        XCTAssertEqual(newYork.zone.secondsFromGMT(for: januaryNoon), -5 * 3600)
        XCTAssertEqual(newYork.zone.secondsFromGMT(for: julyNoon), -4 * 3600)
        XCTAssertNil(newYork.notice)
    }

    /// A midnight drawn in the zone: the start of "today" at 12:00 UTC on 2026-01-15.
    func testTodayStartsAtTheZonesMidnight() {
        XCTAssertEqual(resolve("IST-5:30").zone.startOfDay(for: januaryNoon).timeIntervalSince1970,
                       januaryNoon.timeIntervalSince1970 - 17.5 * 3600, "17:30 in India: midnight was 17 h 30 min before")
        XCTAssertEqual(resolve(":Europe/Berlin").zone.startOfDay(for: januaryNoon).timeIntervalSince1970,
                       januaryNoon.timeIntervalSince1970 - 13 * 3600)
    }

    /// DST rules of its own follow the C library through the year: the zone's offset is localtime_r's at every
    /// hour of two years, and midnight on a summer day and a winter day is the local one (the offset at start,
    /// kept all year, would begin "today" an hour off after the clocks change).
    func testRulesOfItsOwnFollowTheCLibrarysChanges() {
        let resolution = resolve("CET-1CEST,M3.5.0,M10.5.0/3")
        XCTAssertNil(resolution.warning)
        XCTAssertNotNil(resolution.notice)
        XCTAssertEqual(resolution.zone.identifier, "CET-1CEST,M3.5.0,M10.5.0/3")
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
        XCTAssertEqual(zone.startOfDay(for: julyNoon).timeIntervalSince1970, julyNoon.timeIntervalSince1970 - 14 * 3600)
        XCTAssertEqual(zone.startOfDay(for: januaryNoon).timeIntervalSince1970, januaryNoon.timeIntervalSince1970 - 13 * 3600)
        // Southern rules (summer in January) are followed too.
        let south = resolve("AEST-10AEDT,M10.1.0,M4.1.0/3").zone
        XCTAssertEqual(south.secondsFromGMT(for: januaryNoon), 11 * 3600)
        XCTAssertEqual(south.secondsFromGMT(for: julyNoon), 10 * 3600)
    }

    /// Rules no IANA zone shares are the C library's too (before, the offset at start was kept, with a warning).
    func testRulesNoZoneSharesAreFollowedAsTheCLibraryReadsThem() {
        let resolution = resolve("ABC-3XYZ,M1.1.0,M2.1.0")
        XCTAssertNil(resolution.warning)
        XCTAssertEqual(resolution.zone.secondsFromGMT(for: januaryNoon), 4 * 3600, "its summer time, in January")
        XCTAssertEqual(resolution.zone.secondsFromGMT(for: julyNoon), 3 * 3600)
    }

    /// A TZ that is neither a zone nor a POSIX string: the C library keeps UTC, and the log says so.
    func testATZTheCLibraryCannotReadIsUTCWithAWarning() {
        let resolution = resolve("Nowhere/Atlantis")
        XCTAssertEqual(resolution.zone.secondsFromGMT(for: julyNoon), 0)
        XCTAssertTrue(resolution.warning?.contains("neither a zone of /usr/share/zoneinfo/ nor a POSIX TZ string") ?? false,
                      resolution.warning ?? "no warning")
    }
}
