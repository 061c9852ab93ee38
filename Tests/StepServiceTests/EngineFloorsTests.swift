import Foundation
import StepEngine
import StepFleet
import StepLogging
import StepProcessing
import StepServer
import StepService
import StepStore
import TestSupport
import XCTest

/// The daemon's floors against `stepd analyze`'s: the engine fed live (samples in batches, each pressure
/// reading once the samples up to its time have come, as IIOBarometerSource and ReplaySource hand them over)
/// counts what the whole recording counts offline (FloorCounter.counting over the pipeline's steps).
final class EngineFloorsTests: XCTestCase {
    /// Standing 20 s, then straight up three floors at 0.3 m/s, 15 s on along a corridor, 15 s standing.
    private let track = PressureTrack(segments: [
        .init(seconds: 20, walking: false), .stairs(floors: 3, rate: 0.3), .init(seconds: 15, walking: true),
        .init(seconds: 15, walking: false)])

    /// 100 Hz, board axes with gravity: still while the track stands, 1.8 steps a second while it walks.
    private func samples() -> [Sample] {
        stride(from: 0.0, to: track.duration, by: 0.01).map { t in
            let walking = track.profile(at: t).walking
            return Sample(time: t, x: 0.3, y: 0.2, z: 9.81 + (walking ? 3 * sin(2 * .pi * 1.8 * (t - 20)) : 0))
        }
    }

    private var readings: [PressureReading] {
        // Those the samples cover: the last comes no later than the last sample.
        track.readings(rateHz: 4).filter { $0.time < track.duration }.map { PressureReading(time: $0.time, kilopascal: $0.kilopascal) }
    }

    /// A climb begun from standing: the detector reports the bout's first steps only once it is confirmed,
    /// seconds into the stairs. Deciding walking at each reading's arrival lost those seconds of climbing
    /// (and a floor); held back by the detector's delay, the live count is the offline one.
    func testAClimbFromStandingCountsLiveAsAnalyzeCountsIt() throws {
        try climbCountsLiveAsOffline(queueBehind: false)
    }

    /// The processing queue busy while the source hands over samples (a replay at full speed on a loaded machine,
    /// as on CI): the source waits for the queue (Engine.receive runs the batch on the queue from the source's
    /// thread), so it can never be ahead of it, and a reading that goes to the queue never finds readings newer
    /// than samples still queued. When batches were queued (async), such a reading took the accelerometer for
    /// stalled, the readings had no steps and the climb was an elevator ride (0 floors).
    func testAClimbCountsTheSameWhileTheQueueIsBehindTheSource() throws {
        try climbCountsLiveAsOffline(queueBehind: true)
    }

    /// With `queueBehind`, the processing queue is held at the start while another thread hands the recording
    /// over: it must wait (not return) until the queue is free.
    private func climbCountsLiveAsOffline(queueBehind: Bool) throws {
        let engine = Engine()
        engine.sourceStateChanged(.running)
        engine.drain()
        let held = DispatchSemaphore(value: 0), fed = DispatchSemaphore(value: 0)
        if queueBehind { engine.probe { held.wait() } }
        let all = samples()
        let readings = self.readings
        let feed = { @Sendable in
            var pending = readings[...]
            for start in stride(from: 0, to: all.count, by: 10) {
                let batch = Array(all[start..<min(start + 10, all.count)])
                engine.receive(batch)
                while let next = pending.first, next.time <= batch.last!.time {
                    engine.receive(pressure: next)
                    pending = pending.dropFirst()
                }
            }
            fed.signal()
        }
        if queueBehind {
            Thread { feed() }.start()
            XCTAssertEqual(fed.wait(timeout: .now() + 0.5), .timedOut, "the source waits while the queue is busy")
            held.signal()
            fed.wait()
        } else {
            feed()
        }
        engine.drain()
        let live = engine.snapshot

        let pipeline = StepPipeline(detector: StepDetectorKind.default.make(sampleRateHz: 60))
        var stepTimes: [Double] = []
        pipeline.process(all) { stepTimes.append($0) }
        XCTAssertEqual(stepTimes.count, live.steps, "the same steps")
        XCTAssertGreaterThan(stepTimes.first ?? 0, 19.5, "no step while standing")
        let analyzed = FloorCounter.counting(stepTimes: stepTimes, pressure: readings)

        XCTAssertEqual(analyzed.ascended, 3, "offline: three floors")
        XCTAssertEqual(live.floorsAscended, analyzed.ascended, "live as offline")
        XCTAssertEqual(live.floorsDescended, analyzed.descended)

        // The readings of the last hold-back wait for steps that the end of the stream says are not coming.
        engine.sourceStateChanged(.finished)
        engine.drain()
        XCTAssertEqual(engine.snapshot.floorsAscended, analyzed.ascended)
        XCTAssertEqual(try XCTUnwrap(engine.snapshot.relativeAltitudeMeters), try XCTUnwrap(analyzed.relativeAltitudeMeters),
                       accuracy: 1e-9)
    }

    /// While the accelerometer runs, a reading waits for the next batch of samples instead of waking the
    /// processing queue (4 wake-ups a second at 4 Hz); the batch counts it.
    func testAReadingWaitsForTheNextBatchWhileTheAccelerometerRuns() {
        let engine = Engine()
        engine.sourceStateChanged(.running)
        engine.receive([Sample(time: 0, x: 0, y: 0, z: 9.81)])
        engine.drain()   // the state reaches the barometer's side with the queue
        engine.receive(pressure: PressureReading(time: 0.05, kilopascal: 100.5))
        engine.drain()
        XCTAssertNil(engine.snapshot.barometer.lastKilopascal, "not taken before a batch comes")
        engine.receive([Sample(time: 0.1, x: 0, y: 0, z: 9.81)])
        engine.drain()
        XCTAssertEqual(engine.snapshot.barometer.lastKilopascal, 100.5)
        XCTAssertEqual(engine.snapshot.floorsAscended, 0, "floors from the first reading on")
    }

    /// Readings held back do not wait for ever: with the accelerometer stopped they are counted as they come.
    func testReadingsCountAtOnceWhileTheAccelerometerIsNotRunning() {
        let engine = Engine()
        engine.sourceStateChanged(.disconnected(reason: "test"))
        for reading in readings { engine.receive(pressure: reading) }
        engine.drain()
        XCTAssertEqual(engine.snapshot.floorsAscended, 0, "no steps: an elevator, as far as anyone can tell")
        XCTAssertEqual(engine.snapshot.relativeAltitudeMeters ?? .nan, 9, accuracy: 0.5, "every reading counted")
    }
}
