import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Timekeeping
import XCTest

/// The production clock's deadline that moves without waking anyone (the store's backstop, the walk's stall), on
/// a real timerfd: it fires once, after the last time it was set, never once cleared, and never after a cancel.
/// The waits are bounds, not measurements: a move is always far from the deadline it replaces.
final class QuietDeadlineTests: XCTestCase {
    private let queue = DispatchQueue(label: "test.deadline")
    private let clock = SystemClock()

    func testAMovedDeadlineFiresOnceAtTheLastMove() {
        let fired = NIOLockedValueBox(0)
        let done = expectation(description: "fired")
        let deadline = clock.makeQuietDeadline(queue: queue) {
            if fired.withLockedValue({ $0 += 1; return $0 }) == 1 { done.fulfill() }
        }
        // Moved on and on, as batches move the stall deadline: each move replaces the one before.
        for _ in 0..<100 { deadline.schedule(after: 60) }
        deadline.schedule(after: 0.05)
        wait(for: [done], timeout: 30)
        queue.sync {}
        usleep(100_000)  // a window for a second expiry that must not come (a real timerfd), not a wait for an event
        queue.sync {}
        XCTAssertEqual(fired.withLockedValue { $0 }, 1, "one expiry, one handler")
        deadline.cancel()
    }

    func testAClearedDeadlineDoesNotFireUntilSetAgain() {
        let fired = NIOLockedValueBox(0)
        let deadline = clock.makeQuietDeadline(queue: queue) { fired.withLockedValue { $0 += 1 } }
        deadline.schedule(after: 1)
        deadline.clear()
        usleep(1_300_000)  // past the cleared 1 s deadline of a real timerfd: an absence, not a wait for an event
        queue.sync {}
        XCTAssertEqual(fired.withLockedValue { $0 }, 0)
        let done = expectation(description: "fired")
        let again = clock.makeQuietDeadline(queue: queue) { done.fulfill() }
        again.schedule(after: 0)
        wait(for: [done], timeout: 30)
        deadline.cancel()
        again.cancel()
    }

    /// A set that comes after a cancel (another thread's, in the daemon) finds the descriptor closed and does
    /// nothing: it must neither fire nor reach a descriptor the process opened since under the same number.
    func testASetAfterCancelDoesNothing() throws {
        let fired = NIOLockedValueBox(0)
        let deadline = clock.makeQuietDeadline(queue: queue) { fired.withLockedValue { $0 += 1 } }
        deadline.cancel()
        queue.sync {}   // the cancel handler has closed the descriptor
        // The lowest free number: the one the deadline's descriptor had, most likely.
        var pipeEnds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeEnds), 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        deadline.schedule(after: 0)
        deadline.clear()
        usleep(200_000)  // a window for an expiry that must not come (a real timerfd), not a wait for an event
        queue.sync {}
        XCTAssertEqual(fired.withLockedValue { $0 }, 0)
        XCTAssertNotEqual(fcntl(pipeEnds[0], F_GETFD), -1, "the reused descriptor is untouched")
    }
}
