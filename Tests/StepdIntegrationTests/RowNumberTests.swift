import Foundation
@testable import StepAcquisition
import XCTest

/// The reader's number parser on its own: its fast decimal path must give exactly the double, and stop exactly
/// where, strtod does (the parser it stands in for), on every string; and a row is refused when strtod's
/// reading of it would refuse it.
final class RowNumberTests: XCTestCase {
    /// `RowNumber.parse` on `text`: the value's bits and how many bytes it read, nil when it read none.
    private func fast(_ text: String) -> (bits: UInt64, length: Int)? {
        var bytes = Array(text.utf8CString)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress!
            guard let value = RowNumber.parse(&cursor) else { return nil }
            return (value.bitPattern, cursor - buffer.baseAddress!)
        }
    }

    /// strtod on `text`, the same way.
    private func reference(_ text: String) -> (bits: UInt64, length: Int)? {
        var bytes = Array(text.utf8CString)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            var end: UnsafeMutablePointer<CChar>?
            let value = strtod(buffer.baseAddress!, &end)
            let length = end! - buffer.baseAddress!
            return length == 0 ? nil : (value.bitPattern, length)
        }
    }

    private func assertAgrees(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let got = fast(text), expected = reference(text)
        XCTAssertEqual(got?.bits, expected?.bits, "'\(text)': value", file: file, line: line)
        XCTAssertEqual(got?.length, expected?.length, "'\(text)': bytes read", file: file, line: line)
    }

    func testEdgeCasesParseAsStrtodDoes() {
        let cases = ["0", "-0", "+0", "-0.0", "0.000", "+.5", "-.5", "5.", ".", "-", "+", "", " 7.25", "  -1.5", "1e3",
                     "-2.5E-2", "1e", "1e+", "1.5e308", "1e309", "-1e-400", "4.9e-324", "2.2250738585072014e-308",
                     "00012.50", "9007199254740992", "9007199254740993", "9007199254740993.0", "123456789012345678",
                     "1234567890123456789", "12345678901234567890", "0.1234567890123456789", "0.0000000000000000000001",
                     "0.00000000000000000000001", "1.7976931348623157e308", "0x1p3", "0x", "nan", "-nan", "inf",
                     "-Infinity", "1,2", "1 ,2", "1\r", "1\t", "1;2", "١", "1.2.3", "--1", "+-1", "1e3,4", "12abc"]
        for text in cases { assertAgrees(text) }
    }

    /// Decimals as recordings write them (sign, 1 to 25 digits, a point anywhere or none, sometimes an
    /// exponent or a separator after): the same double and stop as strtod, and as Double(String) where the
    /// whole text is a number.
    func testRandomDecimalsParseAsStrtodAndDoubleDo() {
        var generator = SystemRandomNumberGenerator()
        let after = ["", ",", " ", "\r", ",1", "e2", "E-5", "x", " ,"]
        for _ in 0..<200_000 {
            let digits = Int.random(in: 1...25, using: &generator)
            var mantissa = String((0..<digits).map { _ in "0123456789".randomElement(using: &generator)! })
            if Bool.random(using: &generator) {
                let point = Int.random(in: 0...digits, using: &generator)
                mantissa = mantissa.prefix(point) + "." + mantissa.dropFirst(point)
            }
            let sign = ["", "-", "+"].randomElement(using: &generator)!
            let tail = Int.random(in: 0..<4, using: &generator) == 0 ? after.randomElement(using: &generator)! : ""
            let text = sign + mantissa + tail
            assertAgrees(text)
            if tail.isEmpty || tail.hasPrefix("e") || tail.hasPrefix("E"), let value = Double(text) {
                XCTAssertEqual(fast(text)?.bits, value.bitPattern, "'\(text)': Double(String)")
            }
            if fast(text)?.bits != reference(text)?.bits { return }   // one message, not thousands
        }
    }

    /// Short strings of the characters a row holds, in any order: whatever strtod makes of them.
    func testRandomJunkParsesAsStrtodDoes() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789.+-eE ,\r\txnaif")
        for _ in 0..<100_000 {
            let text = String((0..<Int.random(in: 0...10, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            assertAgrees(text)
            if fast(text)?.length != reference(text)?.length { return }
        }
    }

    /// A row is four numbers and commas, spaces around them and a CR at the end allowed; anything else is
    /// refused (and then told as a bad line or header).
    func testRowsAreAcceptedOrRefusedAsBefore() {
        let accepted: [(String, [Double])] = [
            ("0.01,-1.5,2,9.81", [0.01, -1.5, 2, 9.81]), ("0.01 , -1.5 ,2 , 9.81 ", [0.01, -1.5, 2, 9.81]),
            ("0.01,-1.5,2,9.81\r", [0.01, -1.5, 2, 9.81]), ("1e3,+.5,-0,5.", [1000, 0.5, -0.0, 5]),
            (" 1, 2, 3, 4", [1, 2, 3, 4]),
        ]
        for (text, values) in accepted {
            let sample = RecordingReader.parseLine(text)
            XCTAssertEqual(sample.map { [$0.time, $0.acceleration.x, $0.acceleration.y, $0.acceleration.z].map(\.bitPattern) },
                           values.map(\.bitPattern), text)
        }
        for text in ["", "t,x,y,z", "1,2,3", "1,2,3,4,5", "1,2,,4", "1;2;3;4", "1,2,3,4x", "1,2,3,4\r\r x", "1 2 3 4",
                     "1,2,three,4", ",1,2,3,4"] {
            XCTAssertNil(RecordingReader.parseLine(text), text)
        }
    }
}
