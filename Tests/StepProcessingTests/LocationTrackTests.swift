import Foundation
import XCTest
@testable import StepProcessing
import TestSupport

final class LocationTrackTests: XCTestCase {
    func testStraightWalkCountsItsLengthBarTheUncountedTail() {
        var track = TrackBuilder()
        // 400 m east at 1.4 m/s, eph 3 m: moves count every 4 fixes (5.6 m > 5 m); the last 2.4 m are a tail.
        var second = 0.0
        var east = 0.0
        while east < 400 {
            XCTAssertTrue(track.add(FixFactory.fix(second: second, east: east)))
            second += 1
            east = min(400, east + 1.4)
        }
        track.add(FixFactory.fix(second: second, east: 400))
        XCTAssertEqual(track.distanceMeters, 71 * 5.6, accuracy: 0.01)
        XCTAssertEqual(track.points.count, 287)  // 0, 1.4, ... 399.0 m, then 400 m
    }

    func testStationaryJitterAddsNoDistance() {
        var track = TrackBuilder()
        var rng = SplitMix(seed: 7)
        for i in 0..<3600 {
            // ±4 m noise with eph 10 m: never beyond the larger eph.
            track.add(FixFactory.fix(second: Double(i), east: rng.uniform(-4, 4), north: rng.uniform(-4, 4), eph: 10))
        }
        XCTAssertEqual(track.distanceMeters, 0)
    }

    func testMoveMustExceedTheLargerEphOfBothFixes() {
        var track = TrackBuilder()
        track.add(FixFactory.fix(second: 0, east: 0, eph: 20))
        track.add(FixFactory.fix(second: 1, east: 15, eph: 2))  // 15 m < anchor's 20 m: jitter
        XCTAssertEqual(track.distanceMeters, 0)
        track.add(FixFactory.fix(second: 2, east: 21, eph: 2))  // 21 m > 20 m: a move
        XCTAssertEqual(track.distanceMeters, 21, accuracy: 0.01)
        track.add(FixFactory.fix(second: 3, east: 25, eph: 2))  // 4 m: under the 5 m floor
        XCTAssertEqual(track.distanceMeters, 21, accuracy: 0.01)
    }

    func testFixesAboveTheEphBoundOrWithoutEphStayOutOfThePath() {
        var track = TrackBuilder()
        XCTAssertFalse(track.add(FixFactory.fix(second: 0, eph: 25.1)))
        XCTAssertFalse(track.add(FixFactory.fix(second: 1, eph: nil)))
        XCTAssertTrue(track.add(FixFactory.fix(second: 2, eph: 25)))
        XCTAssertEqual(track.points.count, 1)
    }

    func testPathKeepsAtMostTheConfiguredPointsDroppingTheOldest() {
        var configuration = TrackBuilder.Configuration()
        configuration.maximumPoints = 100
        var track = TrackBuilder(configuration: configuration)
        for i in 0..<250 { track.add(FixFactory.fix(second: Double(i), east: Double(i) * 10)) }
        XCTAssertLessThanOrEqual(track.points.count, 100)
        XCTAssertEqual(track.points.count + track.droppedPoints, 250)
        XCTAssertEqual(track.points.last?.time, FixFactory.t0.addingTimeInterval(249))
        XCTAssertEqual(track.distanceMeters, 2490, accuracy: 0.5)
    }
}

final class LocationStrideStretchTests: XCTestCase {
    private let t0 = FixFactory.t0

    func testStretchCompletesAfterTwoHundredMetresWithTheStepsTakenMeanwhile() {
        var stretch = StrideStretch()
        XCTAssertNil(stretch.add(fixTime: t0, ephMeters: 5, trackDistanceMeters: 10, steps: 100))
        XCTAssertNil(stretch.add(fixTime: t0 + 4, ephMeters: 5, trackDistanceMeters: 150, steps: 300))
        XCTAssertNil(stretch.add(fixTime: t0 + 8, ephMeters: 5, trackDistanceMeters: 205, steps: 380))
        let done = stretch.add(fixTime: t0 + 12, ephMeters: 5, trackDistanceMeters: 215, steps: 400)
        XCTAssertEqual(done?.meters ?? 0, 205, accuracy: 1e-9)
        XCTAssertEqual(done?.steps, 300)
    }

    func testStretchBreaksOnAPoorFixOrAGap() {
        var stretch = StrideStretch()
        var t = t0
        _ = stretch.add(fixTime: t, ephMeters: 5, trackDistanceMeters: 0, steps: 0)
        for i in 1...100 {
            t = t0 + Double(i)
            let done = stretch.add(fixTime: t, ephMeters: 5, trackDistanceMeters: Double(i) * 2.5, steps: i * 3)
            if i < 80 { XCTAssertNil(done) }
            if i == 80 {
                XCTAssertEqual(done?.meters ?? 0, 200, accuracy: 1e-9)
                XCTAssertEqual(done?.steps, 240)
            }
        }
        // A poor fix drops the stretch under way; so does a gap.
        XCTAssertNil(stretch.add(fixTime: t + 1, ephMeters: 20, trackDistanceMeters: 400, steps: 400))
        XCTAssertNil(stretch.add(fixTime: t + 2, ephMeters: 5, trackDistanceMeters: 401, steps: 401))
        XCTAssertNil(stretch.add(fixTime: t + 20, ephMeters: 5, trackDistanceMeters: 700, steps: 700))
        XCTAssertNil(stretch.add(fixTime: t + 21, ephMeters: 5, trackDistanceMeters: 701, steps: 701))
        let done = stretch.add(fixTime: t + 22, ephMeters: 5, trackDistanceMeters: 901, steps: 1000)
        XCTAssertEqual(done?.meters ?? 0, 201, accuracy: 1e-9)
        XCTAssertEqual(done?.steps, 300)
    }

    func testStepCountResetStartsANewStretch() {
        var stretch = StrideStretch()
        _ = stretch.add(fixTime: t0, ephMeters: 5, trackDistanceMeters: 0, steps: 500)
        XCTAssertNil(stretch.add(fixTime: t0 + 1, ephMeters: 5, trackDistanceMeters: 300, steps: 10))
        XCTAssertNotNil(stretch.add(fixTime: t0 + 2, ephMeters: 5, trackDistanceMeters: 500, steps: 300))
    }
}
