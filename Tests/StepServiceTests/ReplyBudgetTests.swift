import NIOCore
import NIOEmbedded
@testable import StepService
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
@testable import StepStore
@testable import StepServer
import XCTest

/// The long-reply bytes of all clients: what waits while it is spent starts, in order, as bytes come back, and a
/// long line counts until it is out or dropped.
final class ReplyBudgetTests: XCTestCase {
    func testWaitersStartInOrderOnceThereIsRoom() {
        let loop = EmbeddedEventLoop()
        let budget = ReplyBudget(limitBytes: 100, loop: loop)
        var started: [Int] = []
        budget.charge(100)
        XCTAssertFalse(budget.hasRoom)
        for i in 0..<3 { budget.whenRoom { started.append(i); budget.charge(50) } }
        XCTAssertEqual(started, [])
        budget.release(100)  // 0 held: the first two start (100 held), the third waits for room
        XCTAssertEqual(started, [0, 1])
        budget.release(50)
        XCTAssertEqual(started, [0, 1, 2])
        XCTAssertEqual(budget.heldBytes, 100)
        XCTAssertEqual(budget.peakBytes, 100)
    }

    func testALongLineCountsUntilItsLastSliceOrItsDiscard() {
        let loop = EmbeddedEventLoop()
        let budget = ReplyBudget(limitBytes: 1 << 20, loop: loop)
        let line = Data(repeating: 0x61, count: 40_000)
        let pieces = LinePieces(line, budget: budget)
        XCTAssertEqual(budget.heldBytes, 40_000)
        var out = Data()
        while case .piece(let buffer) = pieces.next(allocator: ByteBufferAllocator(), ready: {}) {
            XCTAssertLessThanOrEqual(buffer.readableBytes, LinePieces.sliceBytes)
            out.append(contentsOf: buffer.readableBytesView)
        }
        XCTAssertEqual(out, line)
        XCTAssertEqual(budget.heldBytes, 0)
        let dropped = LinePieces(line, budget: budget)
        _ = dropped.next(allocator: ByteBufferAllocator(), ready: {})
        dropped.discard()
        XCTAssertEqual(budget.heldBytes, 0)
    }
}
