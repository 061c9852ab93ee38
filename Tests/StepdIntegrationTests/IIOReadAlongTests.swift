import Foundation
import Locking
@testable import StepAcquisition
import XCTest

/// The hand-over of the barometer's reads to the accelerometer's thread (IIOReadAlong), without a device: the
/// reads are closures, the two sides are this test's threads. The daemon end to end is BarometerDaemonTests'.
final class IIOReadAlongTests: XCTestCase {
    private struct Failed: Error {}

    /// A barometer thread leading its reads until woken: what IIOBarometerSource's loop does.
    private final class Barometer: @unchecked Sendable {   // unchecked: `outcome` is written before `done` is signalled
        let thread = SourceThread(name: "test.barometer")
        let done = DispatchSemaphore(value: 0)
        var outcome: IIOReadAlong.Outcome?
        var stopped = false

        func start(_ along: IIOReadAlong, minimumInterval: Double = 0.25, read: @escaping IIOReadAlong.Read) {
            let ready = DispatchSemaphore(value: 0)
            thread.start { [self] in
                let generation = along.lead(listener: thread, minimumInterval: minimumInterval, read: read)
                ready.signal()
                stopped = thread.wait(seconds: .infinity) { along.generation != generation }
                outcome = along.release()
                done.signal()
            }
            ready.wait()
        }
    }

    func testEachRefillReadsTheBarometerAtMostAtItsRateUntilItTakesTheReadBack() {
        let along = IIOReadAlong()
        let reads = Locked(0)
        XCTAssertNil(along.paceHz, "no accelerometer yet")
        along.refilled(paceHz: 1.5, now: 10)
        XCTAssertEqual(along.paceHz, 1.5)
        let generation = along.lead(listener: SourceThread(name: "unused"), minimumInterval: 0.25) { reads.withLock { $0 += 1 } }
        for now in [11, 11.1, 11.2, 11.3, 12, 12.7] { along.refilled(paceHz: 1.5, now: now) }
        XCTAssertEqual(reads.withLock { $0 }, 4, "at 11, 11.3 (0.25 s on), 12 and 12.7: never above the barometer's 4 Hz")
        XCTAssertEqual(along.generation, generation, "the same pace wakes nobody")
        let outcome = along.release()
        XCTAssertNil(outcome.fault)
        XCTAssertFalse(outcome.slow)
        along.refilled(paceHz: 1.5, now: 13)
        XCTAssertEqual(reads.withLock { $0 }, 4, "taken back: the accelerometer reads no more")
    }

    func testAFaultTakesTheReadBackAndWakesTheBarometerToReportIt() {
        let along = IIOReadAlong()
        along.refilled(paceHz: 1.5, now: 0)
        let barometer = Barometer()
        let reads = Locked(0)
        barometer.start(along) {
            reads.withLock { $0 += 1 }
            throw Failed()
        }
        along.refilled(paceHz: 1.5, now: 1)
        XCTAssertEqual(barometer.done.wait(timeout: .now() + 5), .success, "the barometer's thread woken by the fault")
        XCTAssertTrue(barometer.outcome?.fault is Failed, "the fault goes back to the barometer's loop")
        XCTAssertFalse(barometer.stopped)
        along.refilled(paceHz: 1.5, now: 2)
        XCTAssertEqual(reads.withLock { $0 }, 1, "a failed read is not tried again by the accelerometer")
        XCTAssertTrue(barometer.thread.stop())
    }

    func testASlowReadTakesTheReadBack() {
        let along = IIOReadAlong()
        along.refilled(paceHz: 1.5, now: 0)
        let barometer = Barometer()
        // A read slower than the limit (the behaviour under test), not a wait for an event.
        barometer.start(along) { Thread.sleep(forTimeInterval: IIOReadAlong.slowReadSeconds + 0.05) }
        along.refilled(paceHz: 1.5, now: 1)
        XCTAssertEqual(barometer.done.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(barometer.outcome?.slow, true, "the barometer reads on its own thread from then on")
        XCTAssertNil(barometer.outcome?.fault)
        XCTAssertTrue(barometer.thread.stop())
    }

    func testTheAccelerometerStoppingOrChangingPaceWakesTheBarometer() {
        let along = IIOReadAlong()
        along.refilled(paceHz: 1.5, now: 0)
        let still = Barometer()
        still.start(along) {}
        along.refilled(paceHz: 0.2, now: 1)
        XCTAssertEqual(still.done.wait(timeout: .now() + 5), .success, "a new pace (still) to say in STATUS")
        XCTAssertEqual(along.paceHz, 0.2)

        let gone = Barometer()
        gone.start(along) {}
        along.stopped()
        XCTAssertEqual(gone.done.wait(timeout: .now() + 5), .success, "no accelerometer: the barometer's own 4 Hz")
        XCTAssertNil(along.paceHz)
        XCTAssertNil(gone.outcome?.fault)
        XCTAssertTrue(still.thread.stop())
        XCTAssertTrue(gone.thread.stop())
    }

    func testTakingTheReadBackWaitsForTheReadInProgress() {
        let along = IIOReadAlong()
        let inRead = DispatchSemaphore(value: 0)
        let finished = Locked(false)
        _ = along.lead(listener: SourceThread(name: "unused"), minimumInterval: 0.25) {
            inRead.signal()
            Thread.sleep(forTimeInterval: 0.1)  // a read that takes time (the behaviour), not a wait for an event
            finished.withLock { $0 = true }
        }
        let accelerometer = Thread { along.refilled(paceHz: 1.5, now: 0) }
        accelerometer.start()
        inRead.wait()
        _ = along.release()
        XCTAssertTrue(finished.withLock { $0 }, "the barometer's device is not freed under a read")
    }

    func testAStoppedBarometerThreadEndsItsWait() {
        let along = IIOReadAlong()
        along.refilled(paceHz: 1.5, now: 0)
        let barometer = Barometer()
        barometer.start(along) {}
        XCTAssertTrue(barometer.thread.stop())
        XCTAssertEqual(barometer.done.wait(timeout: .now() + 1), .success)
        XCTAssertTrue(barometer.stopped)
    }
}
