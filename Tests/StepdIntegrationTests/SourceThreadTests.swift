import Foundation
import Locking
import Logging
import XCTest
@testable import StepAcquisition

/// SourceThread, which every source (IIO, gpsd, replay) runs on: `stop()` waits for a thread that stops, cuts a
/// blocking read short, and gives up on a wedged one after its time-out, saying so by returning false (each
/// source logs it: stop() is not @discardableResult, so a caller cannot drop it silently).
final class SourceThreadTests: XCTestCase {
    func testStopWaitsUntilTheThreadHasEnded() {
        let thread = SourceThread(name: "test.cooperative")
        let ended = Flag(), running = Flag()
        thread.start {
            running.set()
            while !thread.wait(seconds: 10) {}
            usleep(100_000)   // last work after the stop was seen (the behaviour): stop() must still wait for it
            ended.set()
        }
        let startDeadline = Date().addingTimeInterval(30)
        while !running.isSet, Date() < startDeadline { usleep(1_000) }  // poll interval of a wait for the thread's start
        let began = Date()
        XCTAssertTrue(thread.stop(), "the thread ended within the time-out")
        XCTAssertTrue(ended.isSet, "stop() returned before the thread had ended")
        XCTAssertLessThan(Date().timeIntervalSince(began), 1.5)
        XCTAssertTrue(thread.isStopped)
    }

    /// The kernel's name of the thread (what /proc, top -H and scripts/bench-iio's wake-ups per thread show) is the
    /// source's: Foundation's Thread.name alone left every source's thread named after the executable.
    func testTheThreadCarriesItsNameInTheKernel() {
        let thread = SourceThread(name: "stepd.iio")
        let long = SourceThread(name: "stepd.barometer.extra")
        let seen = Locked<[String]>([])
        for source in [thread, long] {
            source.start {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
                seen.withLock { $0.append(comm.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            let deadline = Date().addingTimeInterval(5)
            while seen.withLock({ $0.count }) < (source === thread ? 1 : 2), Date() < deadline { usleep(2_000) }  // poll interval of a wait for a state, not a fixed wait
            XCTAssertTrue(source.stop())
        }
        XCTAssertEqual(seen.withLock { $0 }, ["stepd.iio", "stepd.barometer"], "cut to the kernel's 15 bytes")
    }

    func testStopCancelsTheBlockingReadTheThreadIsIn() {
        let thread = SourceThread(name: "test.blocking")
        let blocked = DispatchSemaphore(value: 0), unblock = DispatchSemaphore(value: 0)
        thread.start {
            thread.whileBlocking(cancel: { unblock.signal() }) {
                blocked.signal()
                _ = unblock.wait(timeout: .now() + 30)   // a read only the cancel ends
            }
        }
        blocked.wait()
        let began = Date()
        XCTAssertTrue(thread.stop())
        XCTAssertLessThan(Date().timeIntervalSince(began), 1.5, "the read was cancelled, not waited out")
    }

    func testAStopRequestedBeforeTheReadBlocksCancelsItAtOnce() {
        let thread = SourceThread(name: "test.late-read")
        let stopped = DispatchSemaphore(value: 0)
        let cancelled = Flag()
        thread.start {
            stopped.wait()
            thread.whileBlocking(cancel: { cancelled.set() }) {}
        }
        let stopping = Thread { _ = thread.stop() }
        stopping.start()
        while !thread.isStopped { usleep(1_000) }  // poll interval of a wait for a state, not a fixed wait
        stopped.signal()
        let deadline = Date().addingTimeInterval(5)
        while !cancelled.isSet && Date() < deadline { usleep(5_000) }  // poll interval of a wait for a state, not a fixed wait
        XCTAssertTrue(cancelled.isSet, "a read begun after the stop is cancelled as it starts")
    }

    func testAWedgedThreadIsGivenUpAfterTheTimeOutAndStopSaysSo() {
        let thread = SourceThread(name: "test.wedged")
        let release = DispatchSemaphore(value: 0)
        thread.start { _ = release.wait(timeout: .now() + 30) }   // ignores the stop, as a wedged driver would
        let began = Date()
        XCTAssertFalse(thread.stop(timeoutSeconds: 0.3), "the thread is still running")
        let waited = Date().timeIntervalSince(began)
        XCTAssertGreaterThanOrEqual(waited, 0.29)
        XCTAssertLessThan(waited, 2)
        release.signal()
        XCTAssertTrue(thread.stop(timeoutSeconds: 5), "ended once released")
    }

    func testASourceWhoseThreadDidNotStopSaysSoInTheLog() {
        let thread = SourceThread(name: "test.wedged-source")
        let release = DispatchSemaphore(value: 0)
        thread.start { _ = release.wait(timeout: .now() + 30) }
        let lines = Lines()
        let logger = Logger(label: "test") { _ in CapturingHandler(lines: lines) }
        thread.stop(logger: logger, "iio accelerometer", timeoutSeconds: 0.3)
        XCTAssertEqual(lines.all, ["warning: iio accelerometer: the thread did not stop within 0.3 s (a read that does not "
                                   + "return); going on without it"])
        release.signal()
        thread.stop(logger: logger, "iio accelerometer", timeoutSeconds: 5)
        XCTAssertEqual(lines.all.count, 1, "a thread that ends says nothing")
    }
}

private final class Lines: Sendable {
    private let lines = Locked<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

private struct CapturingHandler: LogHandler {
    let lines: Lines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { lines.add("\(event.level): \(event.message)") }
}

/// A flag set on one thread and read on another.
private final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
