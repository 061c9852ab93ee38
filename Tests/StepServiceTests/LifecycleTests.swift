import Dispatch
import Foundation
import Locking
import Logging
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import XCTest

/// The daemon's start and stop contract (Lifecycle), with parts that record what happens to them.
final class LifecycleTests: XCTestCase {
    private struct Failed: Error {}

    /// What the parts did, in order: "start a", "stop a".
    private final class Journal: Sendable {
        private let entries = Locked<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    private func part(_ name: String, _ journal: Journal, budget: Double = 5,
                      start: @escaping @Sendable () throws -> Void = {},
                      stop: @escaping @Sendable () -> Void = {}) -> Lifecycle.Part {
        Lifecycle.Part(name, stopBudgetSeconds: budget, start: {
            try start()
            journal.note("start \(name)")
        }, stop: {
            stop()
            journal.note("stop \(name)")
        })
    }

    private let logger = Logger(label: "test.lifecycle")

    func testPartsStartInOrderAndStopInReverse() throws {
        let journal = Journal()
        let lifecycle = Lifecycle(logger: logger)
        try lifecycle.start(["store", "engine", "server"].map { part($0, journal) })
        XCTAssertEqual(lifecycle.running, ["store", "engine", "server"])
        lifecycle.stop()
        lifecycle.stop()  // a second signal: nothing stops twice
        XCTAssertEqual(journal.all, ["start store", "start engine", "start server",
                                     "stop server", "stop engine", "stop store"])
        XCTAssertEqual(lifecycle.running, [])
    }

    func testAPartThatFailsToStartStopsTheEarlierOnesInReverseAndNeverStartsTheLater() {
        let journal = Journal()
        let lifecycle = Lifecycle(logger: logger)
        let parts = [part("store", journal), part("engine", journal),
                     part("server", journal, start: { throw Failed() }), part("source", journal)]
        XCTAssertThrowsError(try lifecycle.start(parts)) { XCTAssert($0 is Failed, "\($0)") }
        XCTAssertEqual(journal.all, ["start store", "start engine", "stop engine", "stop store"])
        lifecycle.stop()  // the signal after a failed start finds nothing to stop
        XCTAssertEqual(journal.all.count, 4)
    }

    func testAStopDuringStartLetsThePartStartingFinishThenStopsEverythingStarted() throws {
        let journal = Journal()
        let lifecycle = Lifecycle(logger: logger)
        let serverStarting = DispatchSemaphore(value: 0)
        let stopAsked = DispatchSemaphore(value: 0)
        let parts = [part("store", journal),
                     part("server", journal, start: {
                         serverStarting.signal()
                         _ = stopAsked.wait(timeout: .now() + 10)
                     }),
                     part("source", journal)]
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            serverStarting.wait()
            // The signal comes while the server starts.
            DispatchQueue.global().async { lifecycle.stop(); stopped.signal() }
            // stop() cannot return while the server starts: give it time to ask, then let the start finish.
            Thread.sleep(forTimeInterval: 0.2)  // stop() blocks without a sign to wait on: time for it to ask
            stopAsked.signal()
        }
        XCTAssertThrowsError(try lifecycle.start(parts)) {
            XCTAssertEqual("\($0)", "\(Lifecycle.Interruption.stopRequested)")
        }
        XCTAssertEqual(stopped.wait(timeout: .now() + 10), .success, "stop() returned once start gave up")
        XCTAssertEqual(journal.all, ["start store", "start server", "stop server", "stop store"])
    }

    func testAStopBeforeStartMeansNothingStarts() {
        let journal = Journal()
        let lifecycle = Lifecycle(logger: logger)
        lifecycle.stop()
        XCTAssertThrowsError(try lifecycle.start([part("store", journal)]))
        XCTAssertEqual(journal.all, [])
    }

    func testAPartThatHangsOnStopIsCutOffAfterItsBudgetAndTheOthersStillStop() throws {
        let journal = Journal()
        let lifecycle = Lifecycle(logger: logger)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        try lifecycle.start([part("store", journal),
                             part("fleet", journal, budget: 0.3, stop: { release.wait() }),
                             part("source", journal)])
        let began = Date()
        lifecycle.stop()
        let took = Date().timeIntervalSince(began)
        XCTAssertEqual(journal.all, ["start store", "start fleet", "start source", "stop source", "stop store"])
        XCTAssertGreaterThanOrEqual(took, 0.3, "the hung part had its budget")
        XCTAssertLessThan(took, 5, "and no more")
    }
}
