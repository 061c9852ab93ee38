import Foundation
@testable import StepAcquisition
import StepProcessing
import XCTest

/// The reader's pure parts on their own: which header names which unit, which gravity says g, which date-times
/// are read and to which second, which bytes make a file binary.
final class RecordingFormatTests: XCTestCase {
    func testAHeaderNamesTheUnitOrNone() {
        let cases: [(String, RecordingUnits?)] = [
            ("t,x,y,z", .auto), ("time,x,y,z", .auto), ("T, X, Y, Z", .auto),
            ("t,x_g,y_g,z_g", .g), ("time,x_g,y_g,z_g", .g), ("t,x_mps2,y_mps2,z_mps2", .mps2), ("TIME,X_MPS2,Y_MPS2,Z_MPS2", .mps2),
            ("t,x_g,y,z", nil), ("t,x_g,y_g,z_mps2", nil), ("t,x,y", nil), ("t,x,y,z,temperature", nil), ("when,x,y,z", nil),
        ]
        for (line, expected) in cases { XCTAssertEqual(RecordingHeader.units(of: line), expected, line) }
    }

    private func still(_ magnitude: Double, count: Int = 200, leadingZeros: Int = 0) -> ArraySlice<Sample> {
        let zeros = (0..<leadingZeros).map { Sample(time: Double($0) / 100, x: 0, y: 0, z: 0) }
        let rows = (0..<count).map { i in Sample(time: Double(leadingZeros + i) / 100, x: 0.6 * magnitude, y: 0, z: 0.8 * magnitude) }
        return ArraySlice(zeros + rows)
    }

    func testGravityOfAboutOneIsReadAsGWithANoticeAndEverythingElseAsTheFormatSays() {
        let g = RecordingUnitsEstimate.decide(.auto, header: .auto, firstSamples: still(1.0), path: "walk.csv")
        XCTAssertEqual(g.units, .g)
        XCTAssertEqual(g.notice, "walk.csv: the accelerations look like g (median magnitude 1.00 over the first 200 samples): "
                       + "read as g, times 9.80665 (--units mps2 reads them as m/s²)")
        for magnitude in [0.5, 1.9] {
            XCTAssertEqual(RecordingUnitsEstimate.decide(.auto, header: .auto, firstSamples: still(magnitude), path: "p").units, .g)
        }
        for magnitude in [9.81, 5, 20, 3, 0.2] {
            let decision = RecordingUnitsEstimate.decide(.auto, header: .auto, firstSamples: still(magnitude), path: "p")
            XCTAssertEqual(decision.units, .mps2, "\(magnitude)")
            XCTAssertNil(decision.notice)
        }
        // A recorder's zero rows before the sensor starts do not make the median 0.
        XCTAssertEqual(RecordingUnitsEstimate.decide(.auto, header: .auto, firstSamples: still(1, count: 100, leadingZeros: 300), path: "p").units, .g)
        XCTAssertEqual(RecordingUnitsEstimate.decide(.auto, header: .auto, firstSamples: still(0, count: 10), path: "p").units, .mps2)
        // What the user or the header says wins, without a notice.
        XCTAssertEqual(RecordingUnitsEstimate.decide(.mps2, header: .g, firstSamples: still(1), path: "p").units, .mps2)
        XCTAssertEqual(RecordingUnitsEstimate.decide(.g, header: .auto, firstSamples: still(9.81), path: "p").units, .g)
        let named = RecordingUnitsEstimate.decide(.auto, header: .mps2, firstSamples: still(1), path: "p")
        XCTAssertEqual(named.units, .mps2)
        XCTAssertNil(named.notice)
    }

    private func dateTime(_ text: String) -> (seconds: Double, offset: Int?, rest: String)? {
        var bytes = Array(text.utf8CString)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress!
            guard let parsed = RecordingDateTime.parse(&cursor) else { return nil }
            return (parsed.wallSeconds, parsed.offsetSeconds, String(cString: cursor))
        }
    }

    func testDateTimesAreReadToTheirSecondAndOffset() throws {
        // 2014-05-07T13:29:50Z is 1399469390 (date -u -d 2014-05-07T13:29:50 +%s).
        let got = try XCTUnwrap(dateTime("2014-05-07 13:29:50.439,0.1"))
        XCTAssertEqual(got.seconds, 1_399_469_390.439, accuracy: 1e-6)
        XCTAssertNil(got.offset)
        XCTAssertEqual(got.rest, ",0.1")
        let cases: [(String, Double, Int?)] = [
            ("2014-05-07T13:29:50.439+01:00", 1_399_469_390.439, 3600), ("2014-05-07T13:29:50Z", 1_399_469_390, 0),
            ("2014-05-07T13:29:50-0530", 1_399_469_390, -19_800), ("2014-05-07T13:29:50+01", 1_399_469_390, 3600),
            ("1970-01-01 00:00:00", 0, nil), ("2000-02-29 00:00:00.5", 951_782_400.5, nil), ("1969-12-31 23:59:59", -1, nil),
            ("2026-11-20T08:00:00.123456789", 1_795_161_600.123456789, nil),
        ]
        for (text, seconds, offset) in cases {
            let parsed = try XCTUnwrap(dateTime(text), text)
            XCTAssertEqual(parsed.seconds, seconds, accuracy: 1e-6, text)
            XCTAssertEqual(parsed.offset, offset, text)
            XCTAssertEqual(parsed.rest, "", text)
        }
        for text in ["2014-02-29 00:00:00", "2014-13-01 00:00:00", "2014-05-07 24:00:00", "2014-05-07", "2014-05-07 13:29",
                     "2014-05-07T13:29:50+1", "2014-5-07 13:29:50", "20140507T132950"] {
            XCTAssertNil(dateTime(text), text)
        }
    }

    func testARowWithADateTimeIsASampleInUnixSecondsAndWithoutAnOffsetInTheLocalZone() throws {
        var london = LocalWallClock(zone: try XCTUnwrap(TimeZone(identifier: "Europe/London")))
        func parse(_ line: String) -> Sample? {
            line.withCString { RecordingReader.parseLine($0, wallClock: &london) }
        }
        XCTAssertEqual(parse("2014-05-07 14:29:50.5,0.1,0.2,0.98"), Sample(time: 1_399_469_390.5, x: 0.1, y: 0.2, z: 0.98), "BST")
        XCTAssertEqual(parse("2014-01-07 13:29:50,0,0,1")?.time, 1_389_101_390, "GMT")
        XCTAssertEqual(parse("2014-05-07T13:29:50.5+00:00,0.1,0.2,0.98")?.time, 1_399_469_390.5, "an offset is taken as written")
        XCTAssertNil(parse("2014-05-07 13:29:50 0.1,0.2,0.98"))
        XCTAssertEqual(parse("1.2e-05,0,0,9.8")?.time, 1.2e-05, "a number whose fifth character is '-' stays a number")
        XCTAssertNil(parse("2014-"))
    }

    func testTheFirstByteNoTextHoldsIsFound() {
        func first(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBytes { RecordingReader.firstBinaryByte(in: $0) } }
        XCTAssertNil(first(Array("t,x,y,z\r\n0,1,2,3\n\t\u{0C}1,2,3,4 é\n".utf8)))
        XCTAssertEqual(first([0x7F, 0x45, 0x4C, 0x46]), 0, "ELF")
        XCTAssertEqual(first([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), 6, "PNG")
        XCTAssertEqual(first(Array("t,x,y,z\n0,1,2".utf8) + [0]), 13, "NUL")
    }
}
