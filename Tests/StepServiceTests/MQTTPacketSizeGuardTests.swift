@testable import StepService
@testable import StepEngine
@testable import StepLogging
@testable import StepServer
@testable import StepStore
@testable import StepFleet
import XCTest

/// The broker's stream read header by header, however it is cut.
final class MQTTPacketSizeGuardTests: XCTestCase {
    private func feed(_ guardian: inout MQTTPacketSizeGuard, _ bytes: [UInt8]) -> MQTTPacketSizeGuard.Verdict {
        bytes.withUnsafeBytes { guardian.feed($0) }
    }

    func testSmallPacketsPassAndTheirPayloadsAreSkippedWhateverTheCuts() {
        // CONNACK, PUBACK (id 7), PINGRESP, then a 200-byte PUBLISH whose payload is full of header-like bytes.
        let stream: [UInt8] = [0x20, 0x02, 0x00, 0x00, 0x40, 0x02, 0x00, 0x07, 0xD0, 0x00, 0x30, 0xC8, 0x01]
            + [UInt8](repeating: 0xFF, count: 200) + [0xD0, 0x00]
        for cut in 1...stream.count {
            var guardian = MQTTPacketSizeGuard(limitBytes: 256)
            var verdicts: [MQTTPacketSizeGuard.Verdict] = []
            var start = 0
            while start < stream.count {
                verdicts.append(feed(&guardian, Array(stream[start..<min(stream.count, start + cut)])))
                start += cut
            }
            XCTAssertEqual(Set(verdicts.map { "\($0)" }), ["pass"], "cut every \(cut) bytes")
        }
    }

    func testAHeaderDeclaringMoreThanTheLimitIsCaughtEvenSplitByteByByte() {
        var guardian = MQTTPacketSizeGuard(limitBytes: 65_536)
        XCTAssertEqual(feed(&guardian, [0x20, 0x02, 0x00, 0x00, 0x30, 0xFF, 0xFF]), .pass)
        XCTAssertEqual(feed(&guardian, [0xFF]), .pass)
        XCTAssertEqual(feed(&guardian, [0x7F]), .tooLarge(packetType: 3, declaredBytes: 268_435_455))
        var exact = MQTTPacketSizeGuard(limitBytes: 128)
        XCTAssertEqual(feed(&exact, [0x30, 0x80, 0x01]), .pass, "128 bytes: at the limit")
        XCTAssertEqual(feed(&exact, [UInt8](repeating: 0, count: 128) + [0x30, 0x81, 0x01]), .tooLarge(packetType: 3, declaredBytes: 129))
    }

    func testALengthOfFiveBytesIsNotMQTT() {
        var guardian = MQTTPacketSizeGuard()
        XCTAssertEqual(feed(&guardian, [0x30, 0x80, 0x80, 0x80, 0x80]), .malformed)
    }
}
