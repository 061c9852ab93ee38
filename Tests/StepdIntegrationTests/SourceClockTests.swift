import Foundation
import Locking
import Logging
import StepAcquisition
import StepProcessing
import TestSupport
import XCTest

/// The sources' threads sleep on the clock they are given: with a manual clock, a gpsd retry and a replay's
/// pacing happen when the test moves the clock, not when real time passes. The reads are real (libgps against a
/// closed loopback port, the bundled recording); only the waits between them are the test's.
final class SourceClockTests: XCTestCase {
    /// gpsd absent: tries at once, then after 2, 4, 8, 16, 32 and 60 s, and 60 s on (docs/gps.md), each try made
    /// only once the clock has reached it.
    func testAnAbsentGpsdIsTriedAgainOnTheClocksDoublingWaits() throws {
        let clock = ManualClock()
        let lines = CapturedLines()
        var configuration = GPSDSource.Configuration()
        configuration.address = GPSDAddress(host: "127.0.0.1", port: String(GPSDFake.freePort()))
        let source = GPSDSource(configuration: configuration, logger: Logger(label: "test") { _ in CapturingHandler(lines: lines) },
                                clock: clock)
        let sink = GPSStates()
        source.start(sink: sink)
        defer { source.stop() }

        var tries = 1
        func waitForTry(_ n: Int) throws {
            try pollUntil("try \(n) made and the thread asleep on the clock", timeout: 20,
                          detail: "\(lines.tries) tries, \(clock.sleepingCount) asleep") {
                lines.tries.count == n && clock.sleepingCount == 1
            }
        }
        try waitForTry(1)
        XCTAssertEqual(sink.states.count, 1)
        XCTAssert(sink.states.first?.hasPrefix("unavailable") == true, "\(sink.states)")
        for wait in [2.0, 4, 8, 16, 32, 60, 60] {
            XCTAssertEqual(lines.tries.last, wait, "the next try's wait after \(tries) tries")
            clock.advance(by: wait - 0.01)
            XCTAssertEqual(lines.tries.count, tries, "no try before the wait is over")
            XCTAssertEqual(clock.sleepingCount, 1)
            clock.advance(by: 0.01)
            tries += 1
            try waitForTry(tries)
        }
        XCTAssertEqual(sink.states.count, 1, "a retry that fails again reports nothing new: \(sink.states)")
    }

    /// Ten seconds of the clock play ten seconds of the recording, in batches of about 50 ms, and nothing more
    /// until the clock moves again.
    func testAReplayPlaysAsMuchOfTheRecordingAsTheClockMoves() throws {
        let clock = ManualClock()
        let source = try ReplaySource(path: Binaries.bundledRecording, speed: 1, pressure: false, clock: clock)
        let sink = Samples()
        source.start(sink: sink)
        defer { source.stop() }
        try pollUntil("the thread asleep on the clock", timeout: 20) { clock.sleepingCount == 1 }
        XCTAssertEqual(sink.batches, 0, "a batch is handed over when its last sample is due, not before the clock moves")

        for _ in 0..<10 { clock.advance(by: 1) }
        try pollUntil("ten seconds played, then a sleep", timeout: 20, detail: "\(sink.times.count) samples") {
            (sink.times.last ?? 0) - (sink.times.first ?? 0) >= 9.9 && clock.sleepingCount == 1
        }
        let first = try XCTUnwrap(sink.times.first)
        let played = sink.times.last! - first
        XCTAssert((9.95...10.06).contains(played), "\(played) s of the recording for 10 s of the clock")
        let batches = sink.batches
        Thread.sleep(forTimeInterval: 0.2)  // real time passing: nothing plays
        XCTAssertEqual(sink.batches, batches)
        XCTAssertGreaterThan(batches, 150, "about 20 batches a second, not one catch-up batch")
    }
}

private final class CapturedLines: Sendable {
    private let lines = Locked<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    /// The wait each failed try announced ("next try in 2.0 s").
    var tries: [Double] {
        lines.withLock { $0 }.compactMap { line in
            guard let range = line.range(of: "next try in ") else { return nil }
            return Double(line[range.upperBound...].prefix { $0 != " " })
        }
    }
}

private struct CapturingHandler: LogHandler {
    let lines: CapturedLines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { lines.add("\(event.message)") }
}

private final class GPSStates: FixSink, Sendable {
    private let all = Locked<[String]>([])
    func receive(fix: Fix) {}
    func gpsConnectionChanged(_ state: GPSConnectionState) { all.withLock { $0.append("\(state)") } }
    var states: [String] { all.withLock { $0 } }
}

private final class Samples: SampleSink, Sendable {
    private let received = Locked<(times: [Double], batches: Int)>(([], 0))
    func receive(_ samples: [Sample]) {
        received.withLock {
            $0.times += samples.map(\.time)
            $0.batches += 1
        }
    }
    func sourceStateChanged(_ state: SourceState) {}
    var times: [Double] { received.withLock { $0.times } }
    var batches: Int { received.withLock { $0.batches } }
}
