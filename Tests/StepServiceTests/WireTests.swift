import Foundation
import StepProtocol
import XCTest

/// The protocol's encoding edges: request ids kept exactly, errors that keep the id, no non-finite number.
final class WireTests: XCTestCase {
    func testWholeNumberIDsRoundTripExactlyBeyondTwoToThe53() throws {
        for text in ["9007199254740993", "-9223372036854775808", "18446744073709551615", "0", "2.5", "\"a\"", "null", "[1,{\"b\":true}]"] {
            let request = try Request.parse(Data((#"{"cmd":"steps","id":"# + text + "}").utf8))
            let line = String(decoding: Wire.line(ErrorMessage(message: "m", id: request.id)), as: UTF8.self)
            XCTAssert(line.contains("\"id\":\(text)"), "\(text) → \(line)")
        }
    }

    func testAnUnknownCommandsFailureKeepsTheID() {
        XCTAssertThrowsError(try Request.parse(Data(#"{"cmd":"fly","id":42}"#.utf8))) { error in
            XCTAssertEqual((error as? RequestFailure)?.id, .integer(42))
            XCTAssertEqual((error as? RequestFailure)?.reason, .unknownCommand("fly"))
        }
        XCTAssertThrowsError(try Request.parse(Data("[1]".utf8))) { error in
            XCTAssertNil((error as? RequestFailure)?.id)
        }
    }

    func testNonFiniteNumbersAreSentAsNullNotAnEncodingFailure() throws {
        let message = MotionMessage(time: "t", pitch_deg: .nan, roll_deg: .infinity, vertical_accel: -.infinity, vibration_rms: 0.5)
        let line = Wire.line(message)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: line) as? [String: Any])
        XCTAssertEqual(object["class"] as? String, "MOTION")
        XCTAssert(object["pitch_deg"] is NSNull && object["roll_deg"] is NSNull && object["vertical_accel"] is NSNull, "\(object)")
        XCTAssertEqual(object["vibration_rms"] as? Double, 0.5)
    }
}
