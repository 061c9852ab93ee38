import Foundation
import XCTest
@testable import StepProtocol

final class TimestampTests: XCTestCase {
    func testFormatsUTCWithMillisecondsLikeGpsd() {
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 1_795_379_163.466)), "2026-11-22T20:26:03.466Z")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 951_782_400)), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: -0.5)), "1969-12-31T23:59:59.500Z")
    }

    func testFormatsLocalTimeWithTheOffsetOfThatInstant() throws {
        let berlin = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        // 2026-03-29 01:00 UTC is the switch to summer time: 02:00 local jumps to 03:00.
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 1_774_745_999), in: berlin), "2026-03-29T01:59:59.000+01:00")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 1_774_746_000), in: berlin), "2026-03-29T03:00:00.000+02:00")
        let kolkata = try XCTUnwrap(TimeZone(identifier: "Asia/Kolkata"))
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 0), in: kolkata), "1970-01-01T05:30:00.000+05:30")
        XCTAssertEqual(Timestamp.day(Date(timeIntervalSince1970: 66_600), in: kolkata), "1970-01-02")
        let newYork = try XCTUnwrap(TimeZone(identifier: "America/New_York"))
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 0), in: newYork), "1969-12-31T19:00:00.000-05:00")
    }

    func testParsesWhatItFormatsAndCommonVariants() throws {
        for seconds in [0.0, 1_795_379_163.466, 951_782_400, -86_400.25, 4_102_444_800] {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(try XCTUnwrap(Timestamp.date(Timestamp.string(date))).timeIntervalSince1970, seconds, accuracy: 1e-6)
        }
        XCTAssertEqual(Timestamp.date("2026-11-22T08:00:00Z")?.timeIntervalSince1970, 1_795_334_400)
        XCTAssertEqual(Timestamp.date("2026-11-22T09:00:00+01:00")?.timeIntervalSince1970, 1_795_334_400)
        XCTAssertEqual(Timestamp.date("2026-11-22T02:30:00-0530")?.timeIntervalSince1970, 1_795_334_400)
    }

    func testRejectsWhatIsNotATime() {
        for text in ["", "yesterday", "2026-11-22", "2026-13-01T00:00:00Z", "2026-11-22T25:00:00Z", "2026-11-22T08:00:00",
                     "2026-11-22T08:00:00.Z", "2026-11-22T08:00:00Zjunk", "2026-11-22T08:00:00+1", "２０２６-11-22T08:00:00Z"] {
            XCTAssertNil(Timestamp.date(text), text)
        }
    }
}
