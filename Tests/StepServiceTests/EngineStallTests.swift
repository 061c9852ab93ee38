import Foundation
import StepProcessing
import StepService
import XCTest

/// The pedometer's figures when steps stop without a sample to say so (a source that stalls silently).
final class EngineStallTests: XCTestCase {
    func testCadenceFallsToZeroAndTheWalkEndsWhenSamplesStopMidWalk() throws {
        let engine = Engine()
        // 20 s of walking at 1.8 steps a second, handed over at once, then nothing more.
        let samples = stride(from: 0.0, to: 20, by: 0.01).map { t in
            Sample(time: t, x: 0.3, y: 0.2, z: 9.81 + 3 * sin(2 * .pi * 1.8 * t))
        }
        engine.receive(samples)
        engine.drain()
        let walking = engine.snapshot
        XCTAssertGreaterThan(walking.steps, 20)
        XCTAssertGreaterThan(walking.cadenceStepsPerMinute, 90)
        XCTAssertNotNil(walking.currentPaceSecondsPerMeter)
        XCTAssertEqual(walking.activity, .walking)

        // Bounded wait on the condition: the engine's stall timer fires 4 s after the last steps.
        let deadline = Date().addingTimeInterval(15)
        while engine.snapshot.cadenceStepsPerMinute > 0 && Date() < deadline { usleep(100_000) }
        let stalled = engine.snapshot
        XCTAssertEqual(stalled.cadenceStepsPerMinute, 0)
        XCTAssertNil(stalled.currentPaceSecondsPerMeter)
        XCTAssertEqual(stalled.activity, .stationary)
        XCTAssertEqual(stalled.steps, walking.steps, "the count stays")
    }
}
