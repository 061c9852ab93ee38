import Foundation
import XCTest
@testable import StepProcessing

final class LocationFixGateTests: XCTestCase {
    func testFirstReportAfterConnectingWaitsForTimeToMoveOn() {
        var gate = FixGate()
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 100)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 100)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 101)), .accepted)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 102)), .accepted)
    }

    func testCachedFixHandedOutOnReconnectIsNotCurrent() {
        var gate = FixGate()
        _ = gate.judge(FixFactory.fix(second: 1))
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 2)), .accepted)
        gate.connected()
        // gpsd restarts and repeats its last fix: not current until time moves on.
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 2)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 3)), .accepted)
    }

    func testOlderFixAfterReconnectIsStale() {
        var gate = FixGate()
        _ = gate.judge(FixFactory.fix(second: 50))
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 51)), .accepted)
        gate.connected()
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 10)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 11)), .stale)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 52)), .accepted)
    }

    func testSecondReportOfTheSameEpochRefines() {
        var gate = FixGate()
        _ = gate.judge(FixFactory.fix(second: 0))
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 1)), .accepted)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 1)), .refines)
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 0.5)), .stale)
    }

    func testReportsWithoutPositionOrTimeAreNotFixes() {
        var gate = FixGate()
        XCTAssertEqual(gate.judge(FixFactory.fix(second: 1, mode: .noFix)), .noFix)
        var noTime = FixFactory.fix(second: 1)
        noTime.time = nil
        XCTAssertEqual(gate.judge(noTime), .noTime)
        var nan = FixFactory.fix(second: 1)
        nan.latitudeDegrees = .nan
        XCTAssertEqual(gate.judge(nan), .noFix)
    }

    func testOldDatesAreAcceptedBecauseOnlyTheReceiverClockCounts() {
        var gate = FixGate()
        let old = Date(timeIntervalSince1970: 0)  // 1970: a replayed log, far from the wall clock
        var a = FixFactory.fix(second: 0)
        a.time = old
        var b = a
        b.time = old.addingTimeInterval(1)
        _ = gate.judge(a)
        XCTAssertEqual(gate.judge(b), .accepted)
    }
}
