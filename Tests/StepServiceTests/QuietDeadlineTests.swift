import Dispatch
import Foundation
import NIOConcurrencyHelpers
@testable import StepService
import XCTest

/// The deadline that moves without waking anyone (the store's backstop, the walk's stall): it fires once, after
/// the last time it was set, and never once cleared.
final class QuietDeadlineTests: XCTestCase {
    private let queue = DispatchQueue(label: "test.deadline")

    func testAMovedDeadlineFiresOnceAfterTheLastMove() {
        let fired = NIOLockedValueBox<[Date]>([])
        let deadline = QuietDeadline(queue: queue) { fired.withLockedValue { $0.append(Date()) } }
        // Moved 0.3 s on every 0.1 s for 1 s, as batches move the stall deadline: it never comes meanwhile.
        var lastSet = Date()
        for _ in 0..<10 {
            lastSet = Date()
            deadline.set(after: 0.3)
            usleep(100_000)
        }
        XCTAssertEqual(fired.withLockedValue { $0.count }, 0)
        let waitUntil = Date().addingTimeInterval(2)
        while fired.withLockedValue({ $0.isEmpty }) && Date() < waitUntil { usleep(10_000) }
        usleep(300_000)
        let times = fired.withLockedValue { $0 }
        XCTAssertEqual(times.count, 1)
        if let first = times.first { XCTAssertGreaterThanOrEqual(first.timeIntervalSince(lastSet), 0.3) }
        deadline.cancel()
    }

    func testAClearedDeadlineDoesNotFire() {
        let fired = NIOLockedValueBox(0)
        let deadline = QuietDeadline(queue: queue) { fired.withLockedValue { $0 += 1 } }
        deadline.set(after: 0.1)
        deadline.clear()
        usleep(400_000)
        XCTAssertEqual(fired.withLockedValue { $0 }, 0)
        deadline.set(after: 0)
        let waitUntil = Date().addingTimeInterval(2)
        while fired.withLockedValue({ $0 }) == 0 && Date() < waitUntil { usleep(10_000) }
        XCTAssertEqual(fired.withLockedValue { $0 }, 1, "set again, it fires")
        deadline.cancel()
    }
}
