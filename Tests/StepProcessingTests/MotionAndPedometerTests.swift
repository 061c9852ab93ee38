import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

final class MotionEstimatorTests: XCTestCase {
    private func settle(_ estimator: inout MotionEstimator, on a: Vector3, seconds: Double = 20) -> MotionEstimate {
        var last: MotionEstimate!
        for n in 0..<Int(seconds * 60) { last = estimator.update(Sample(time: Double(n) / 60, acceleration: a)) }
        return last
    }

    func testFlatFaceUpHasNoTiltAndNoVerticalAcceleration() {
        var estimator = MotionEstimator()
        let m = settle(&estimator, on: Vector3(x: 0, y: 0, z: standardGravity))
        XCTAssertEqual(m.pitchDegrees, 0, accuracy: 1e-9)
        XCTAssertEqual(m.rollDegrees, 0, accuracy: 1e-9)
        XCTAssertEqual(m.verticalAcceleration, 0, accuracy: 1e-9)
        XCTAssertEqual(m.vibrationRMS, 0, accuracy: 1e-9)
        XCTAssertEqual(m.gravity.z, standardGravity, accuracy: 1e-9)
    }

    func testTiltFollowsGravity() {
        var estimator = MotionEstimator()
        let g = standardGravity
        // Standing on its bottom edge: gravity along +y is a pitch of 90°.
        XCTAssertEqual(settle(&estimator, on: Vector3(x: 0, y: g, z: 0)).pitchDegrees, 90, accuracy: 0.01)
        estimator.reset()
        // Tilted 30° about y: gravity partly along -x is a roll of +30°.
        let m = settle(&estimator, on: Vector3(x: -g * sin(.pi / 6), y: 0, z: g * cos(.pi / 6)))
        XCTAssertEqual(m.rollDegrees, 30, accuracy: 0.01)
        XCTAssertEqual(m.pitchDegrees, 0, accuracy: 0.01)
    }

    func testVerticalAccelerationIsUpPositiveWithGravityRemoved() {
        var estimator = MotionEstimator()
        _ = settle(&estimator, on: Vector3(x: 0, y: 0, z: standardGravity))
        // A sudden 2 m/s^2 push up, felt as extra acceleration along gravity's reaction (+z when face up).
        let m = estimator.update(Sample(time: 100, acceleration: Vector3(x: 0, y: 0, z: standardGravity + 2)))
        XCTAssertEqual(m.verticalAcceleration, 2, accuracy: 0.3)
        XCTAssertGreaterThan(m.verticalAcceleration, 1.5)
    }

    func testVibrationRMSMeasuresFastShakingOnly() {
        var estimator = MotionEstimator()
        var slow: MotionEstimate!, fast: MotionEstimate!
        for n in 0..<600 {
            let t = Double(n) / 60
            slow = estimator.update(Sample(time: t, x: 0, y: 0, z: standardGravity + sin(2 * .pi * 1 * t)))
        }
        estimator.reset()
        for n in 0..<600 {
            let t = Double(n) / 60
            fast = estimator.update(Sample(time: t, x: 0, y: 0, z: standardGravity + sin(2 * .pi * 15 * t)))
        }
        XCTAssertLessThan(slow.vibrationRMS, 0.05)
        // A unit sine's RMS is 0.707; the 5 Hz high-pass passes 15 Hz nearly whole.
        XCTAssertEqual(fast.vibrationRMS, 0.707, accuracy: 0.08)
    }
}

final class ActivityTrackerTests: XCTestCase {
    func testWalkingStartsWithAStepAndStopsAfterAPause() {
        var tracker = ActivityTracker(pauseSeconds: 2.5)
        XCTAssertEqual(tracker.step(at: 1.0), .walking)
        XCTAssertNil(tracker.step(at: 1.5))
        XCTAssertNil(tracker.advance(to: 3.9))
        let stop = tracker.advance(to: 4.1)
        XCTAssertEqual(stop?.0, .stationary)
        XCTAssertEqual(stop?.at, 1.5)
        XCTAssertNil(tracker.advance(to: 10))
        XCTAssertEqual(tracker.activeSeconds, 0.5, accuracy: 1e-12)
        XCTAssertEqual(tracker.step(at: 20), .walking)
        _ = tracker.step(at: 21)
        XCTAssertEqual(tracker.activeSeconds, 1.5, accuracy: 1e-12)
    }
}

final class StrideModelTests: XCTestCase {
    func testHeightRuleUntilCalibrated() {
        let model = StrideModel(heightMeters: 1.80)
        XCTAssertEqual(model.strideMeters, 0.7452, accuracy: 1e-9)
        XCTAssertFalse(model.isCalibrated)
    }

    func testGPSCalibrationMovesTowardsTheMeasuredStride() {
        var model = StrideModel(heightMeters: 1.70)
        XCTAssertTrue(model.calibrate(gpsDistanceMeters: 400, steps: 500))  // 0.8 m
        XCTAssertTrue(model.isCalibrated)
        XCTAssertEqual(model.strideMeters, 0.414 * 1.70 + (0.8 - 0.414 * 1.70) * 500 / 600, accuracy: 1e-9)
        for _ in 0..<20 { model.calibrate(gpsDistanceMeters: 400, steps: 500) }
        XCTAssertEqual(model.strideMeters, 0.8, accuracy: 0.005)
    }

    func testImplausibleStretchesAreIgnored() {
        var model = StrideModel()
        XCTAssertFalse(model.calibrate(gpsDistanceMeters: 1000, steps: 100), "10 m strides: a car, not a walk")
        XCTAssertFalse(model.calibrate(gpsDistanceMeters: 5, steps: 100), "GPS standing still")
        XCTAssertFalse(model.calibrate(gpsDistanceMeters: 8, steps: 10), "too short a stretch to trust")
        XCTAssertFalse(model.isCalibrated)
    }
}
