import Foundation
import Locking
import StepAcquisition
import StepProcessing
import Synchronization
import XCTest

/// What a replay shares between its playing thread and the others, as the daemon uses it: stepd reads
/// `pressurePath` on the main thread after `start` (BarometerChoice) while the playing thread feeds the pressure
/// file. Nothing here can fail in an ordinary build; under ThreadSanitizer (`make test-tsan`, which CI runs after
/// `make test`) an unsynchronised access between the two threads is a report, and a report fails the run (issue 26:
/// `ReplaySource.pressure` is written by `PressureFeed.feed` on the playing thread and read by `pressurePath` on
/// the caller's).
final class ReplayThreadingTests: XCTestCase {
    /// Counts what the replay delivers in atomics, so that the sink itself has no access for the sanitizer to
    /// report (not a Mutex: ThreadSanitizer does not see Synchronization.Mutex's lock on Linux, and reports the
    /// accesses it orders as races).
    final class CountingSink: SampleSink, BarometerSink {
        let samples = Atomic(0)
        let pressures = Atomic(0)
        func receive(_ samples: [Sample]) { self.samples.wrappingAdd(samples.count, ordering: .relaxed) }
        func sourceStateChanged(_ state: SourceState) {}
        func samplesRejected(_ count: Int) {}
        func sourceIdentified(kind: String, description: String) {}
        func hardwareStepsChanged(_ steps: Int) {}
        func receive(pressure: PressureReading) { pressures.wrappingAdd(1, ordering: .relaxed) }
        func barometerStateChanged(_ state: SourceState) {}
        func barometerIdentified(kind: String, description: String, rateHz: Double?) {}
    }

    func testPressurePathIsReadWhileThePlayingThreadFeedsThePressureFile() throws {
        let directory = try TemporaryDirectory()
        let recording = directory.file("walk.csv.gz")
        try FileManager.default.copyItem(atPath: Binaries.bundledRecording, toPath: recording)
        let pressurePath = directory.file("walk.pressure.csv")
        let rows = (0..<400).map { String(format: "%.2f,%.4f", Double($0) / 4, 101.325 - Double($0) * 0.0001) }
        try (["t,p_kpa"] + rows).joined(separator: "\n").write(toFile: pressurePath, atomically: true, encoding: .utf8)

        // Twenty times real time, looped: the 100 s recording and its pressure file pass every 5 s.
        let replay = try ReplaySource(path: recording, speed: 20, loop: true)
        let sink = CountingSink()
        replay.start(sink: sink, barometer: sink)
        defer { replay.stop() }
        let deadline = Date().addingTimeInterval(30)
        var reads = 0
        while sink.pressures.load(ordering: .relaxed) < 200 && Date() < deadline {
            XCTAssertEqual(replay.pressurePath, pressurePath)
            reads += 1
            usleep(1_000)  // the pace of the load or probe under test, not a wait for an event
        }
        XCTAssertGreaterThanOrEqual(sink.pressures.load(ordering: .relaxed), 200, "the replay fed too few readings")
        XCTAssertGreaterThan(sink.samples.load(ordering: .relaxed), 0)
        XCTAssertGreaterThan(reads, 10)
    }
}
