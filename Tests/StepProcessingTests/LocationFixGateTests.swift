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

/// Fixes no receiver could mean are refused before they can become the position or the time to beat.
final class FixGatePlausibilityTests: XCTestCase {
    private func fix(second: Double, arrivalSecond: Double? = nil, eph: Double? = 3, epv: Double? = 5) -> Fix {
        var f = FixFactory.fix(second: second, eph: eph)
        f.epvMeters = epv
        f.arrival = FixFactory.t0.addingTimeInterval(arrivalSecond ?? second + 0.3)
        return f
    }

    func testAFutureDatedFixIsRejectedAndGoodFixesAfterItAreAccepted() {
        var gate = FixGate()
        _ = gate.judge(fix(second: 0))
        XCTAssertEqual(gate.judge(fix(second: 1)), .accepted)
        // Dated 2099 (75 years ahead of its arrival): rejected, and not the time later fixes must pass.
        XCTAssertEqual(gate.judge(fix(second: 75 * 365 * 86_400, arrivalSecond: 1.5)), .future)
        XCTAssertEqual(gate.judge(fix(second: 2)), .accepted)
        XCTAssertEqual(gate.judge(fix(second: 3)), .accepted)
        XCTAssertEqual(gate.rejected, 1)
    }

    func testAFutureDatedFixFirstAfterConnectingIsNotTheBaseline() {
        var gate = FixGate()
        gate.connected()
        XCTAssertEqual(gate.judge(fix(second: 4_000_000_000, arrivalSecond: 10)), .future)
        XCTAssertEqual(gate.judge(fix(second: 10)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(fix(second: 11)), .accepted)
        gate.connected()
        XCTAssertEqual(gate.judge(fix(second: 4_000_000_000, arrivalSecond: 12)), .future)
        XCTAssertEqual(gate.judge(fix(second: 12)), .awaitingTimeToMoveOn)
        XCTAssertEqual(gate.judge(fix(second: 13)), .accepted)
    }

    func testAReceiverDatedAheadFixAfterFixIsFollowedOnItsOwnClock() {
        // gpsd dates an old receiver 1024 weeks on (GPS week rollover): every fix is ahead, the positions right.
        var gate = FixGate()
        let ahead = 1024.0 * 7 * 86_400
        var verdicts: [FixGate.Verdict] = []
        for second in 0..<16 {
            verdicts.append(gate.judge(fix(second: ahead + Double(second) * 2.5, arrivalSecond: Double(second) * 2.5)))
        }
        // Rejected until five of them span ten seconds, then ordered as usual on the receiver's clock.
        XCTAssertEqual(Array(verdicts.prefix(4)), Array(repeating: .future, count: 4))
        XCTAssertEqual(verdicts[4], .awaitingTimeToMoveOn, "the first fix followed is the baseline, as after connecting")
        XCTAssertEqual(Array(verdicts.suffix(11)), Array(repeating: .accepted, count: 11))
        XCTAssertTrue(gate.followsReceiverClock)
        XCTAssertEqual(gate.rejected, 4)
        // The receiver's dates agree with the local clock again: those fixes are accepted, not "stale".
        XCTAssertEqual(gate.judge(fix(second: 41)), .accepted)
        XCTAssertFalse(gate.followsReceiverClock)
        XCTAssertEqual(gate.judge(fix(second: 42)), .accepted)
    }

    /// docs/gps.md's count: a 1 Hz receiver dated 1024 weeks ahead loses its first ten fixes (the 2034-2035
    /// dates of old logs replayed through gpsd), then the eleventh is the baseline.
    func testAOneHertzReceiverDatedAheadLosesItsFirstTenFixes() {
        var gate = FixGate()
        let ahead = 1024.0 * 7 * 86_400
        let verdicts = (0..<14).map { second in gate.judge(fix(second: ahead + Double(second), arrivalSecond: Double(second))) }
        XCTAssertEqual(Array(verdicts.prefix(10)), Array(repeating: .future, count: 10))
        XCTAssertEqual(verdicts[10], .awaitingTimeToMoveOn)
        XCTAssertEqual(Array(verdicts.suffix(3)), Array(repeating: .accepted, count: 3))
        XCTAssertEqual(gate.rejected, 10)
    }

    func testFutureDatesThatDoNotRunOnTogetherAreNeverFollowed() {
        var gate = FixGate()
        _ = gate.judge(fix(second: 0))
        // A stray far date between good fixes, again and again: the run restarts at each good fix.
        for second in stride(from: 1.0, to: 60, by: 2) {
            XCTAssertEqual(gate.judge(fix(second: 4_000_000_000 + second, arrivalSecond: second)), .future)
            XCTAssertEqual(gate.judge(fix(second: second + 1)), .accepted)
        }
        XCTAssertFalse(gate.followsReceiverClock)
    }

    func testAFixAFewSecondsAheadIsStillAccepted() {
        var gate = FixGate()
        _ = gate.judge(fix(second: 0))
        // A receiver's epoch reaches us after it: a clock a little behind is no reason to refuse.
        XCTAssertEqual(gate.judge(fix(second: 4.5, arrivalSecond: 0.5)), .accepted)
        XCTAssertEqual(gate.judge(fix(second: 11, arrivalSecond: 5)), .future)
    }

    func testNegativeNonFiniteOrAbsurdErrorEstimatesAreRejected() {
        var gate = FixGate()
        _ = gate.judge(fix(second: 0))
        XCTAssertEqual(gate.judge(fix(second: 1, eph: 1e308)), .implausibleError)
        XCTAssertEqual(gate.judge(fix(second: 2, epv: -5)), .implausibleError)
        XCTAssertEqual(gate.judge(fix(second: 3, eph: .infinity)), .implausibleError)
        XCTAssertEqual(gate.judge(fix(second: 4, eph: .nan)), .implausibleError)
        XCTAssertEqual(gate.judge(fix(second: 5, eph: 150_000)), .implausibleError)
        XCTAssertEqual(gate.judge(fix(second: 6, eph: -0.1)), .implausibleError)
        XCTAssertEqual(gate.rejected, 6)
        // Unknown (gpsd left it out) is not absurd; 90 km is poor but possible.
        XCTAssertEqual(gate.judge(fix(second: 7, eph: nil, epv: nil)), .accepted)
        XCTAssertEqual(gate.judge(fix(second: 8, eph: 90_000)), .accepted)
    }
}
