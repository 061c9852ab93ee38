import Foundation
import Logging
import NIOConcurrencyHelpers
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import TestSupport
import XCTest

/// A log handler that keeps what it is given, in a box the test holds too.
private struct CapturedLines: LogHandler {
    let lines = NIOLockedValueBox<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lines.withLockedValue { $0.append("\(event.level) \(event.message)") }
    }
}


final class RateLimitedLogTests: XCTestCase {
    private func makeLog(interval: TimeInterval = 10, maximumCauses: Int = 256) -> (RateLimitedLog, CapturedLines, ManualClock) {
        let captured = CapturedLines()
        let clock = ManualClock()
        let logger = Logger(label: "test") { _ in captured }
        let log = RateLimitedLog(logger: logger, interval: interval, maximumCauses: maximumCauses,
                                 clock: clock)
        return (log, captured, clock)
    }

    /// The count is told when the interval ends, by the log's own timer, with no later line to bring it.
    func testTheCountIsToldWhenTheIntervalEndsWithoutAnotherLine() {
        let (log, captured, clock) = makeLog()
        for _ in 0..<3 { log.log(.warning, cause: "slow reader", "dropped a watcher") }
        clock.advance(by: 9.9)
        XCTAssertEqual(captured.lines.withLockedValue { $0 }, ["warning dropped a watcher"])
        clock.advance(by: 0.2)
        XCTAssertEqual(captured.lines.withLockedValue { $0 },
                       ["warning dropped a watcher", "warning dropped a watcher (2 more times in the last 10 s)"])
    }

    func testTheFirstOccurrenceIsLoggedAndRepeatsAreCountedOncePerInterval() {
        let (log, captured, clock) = makeLog()
        for _ in 0..<1000 { log.log(.notice, cause: "reset uid 65534", "refused reset from uid 65534") }
        XCTAssertEqual(captured.lines.withLockedValue { $0 }, ["notice refused reset from uid 65534"])
        clock.advance(by: 9.9)
        log.flush()
        XCTAssertEqual(captured.lines.withLockedValue { $0.count }, 1, "still within the interval")
        clock.advance(by: 0.1)
        log.flush()
        XCTAssertEqual(captured.lines.withLockedValue { $0 }.last,
                       "notice refused reset from uid 65534 (999 more times in the last 10 s)")
        log.log(.notice, cause: "reset uid 65534", "refused reset from uid 65534")
        XCTAssertEqual(captured.lines.withLockedValue { $0.count }, 3, "a new interval logs at once again")
    }

    func testEachCauseHasItsOwnInterval() {
        let (log, captured, clock) = makeLog()
        log.log(.warning, cause: "a", "cause a")
        log.log(.warning, cause: "b", "cause b")
        log.log(.warning, cause: "a", "cause a")
        XCTAssertEqual(captured.lines.withLockedValue { $0 }, ["warning cause a", "warning cause b"])
        clock.advance(by: 11)
        log.log(.warning, cause: "a", "cause a")
        XCTAssertEqual(captured.lines.withLockedValue { $0 }.suffix(2),
                       ["warning cause a (once more in the last 10 s)", "warning cause a"])
    }

    func testAFloodOfDistinctCausesIsCappedUnderOneSharedCount() {
        let (log, captured, clock) = makeLog(maximumCauses: 4)
        for i in 0..<100 { log.log(.warning, cause: "uid \(i)", "refused uid \(i)") }
        XCTAssertEqual(captured.lines.withLockedValue { $0.count }, 4)
        clock.advance(by: 10)
        log.flush()
        XCTAssertEqual(captured.lines.withLockedValue { $0 }.last,
                       "warning more client-triggered events of other kinds (96 more times in the last 10 s)")
    }
}
