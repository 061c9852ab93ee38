import Foundation
import StepProcessing
import TestSupport
import XCTest

/// Floors from pressure tracks synthesised from physics (TestSupport/PressureTrack.swift): the barometric
/// formula, the BMP280's datasheet noise and a weather drift of 1 hPa an hour, walked with steps or ridden.
final class FloorCounterTests: XCTestCase {
    private func count(_ track: PressureTrack, rateHz: Double = 4) -> FloorCounter {
        FloorCounter.counting(stepTimes: track.stepTimes(),
                              pressure: track.readings(rateHz: rateHz).map { PressureReading(time: $0.time, kilopascal: $0.kilopascal) })
    }

    func testBarometricFormulaRoundTrips() {
        XCTAssertEqual(FloorCounter.altitudeMeters(pressureKilopascal: 101.325), 0, accuracy: 1e-9)
        XCTAssertEqual(FloorCounter.altitudeMeters(pressureKilopascal: FloorCounter.pressureKilopascal(altitudeMeters: 250)),
                       250, accuracy: 1e-6)
        XCTAssertEqual(FloorCounter.pressureKilopascal(altitudeMeters: 250), PressureTrack.pressureKilopascal(altitude: 250),
                       accuracy: 1e-9)
    }

    func testThreeFloorsUpAndTwoDownOnFoot() {
        for rate in [0.15, 0.3, 0.6] {
            for seed: UInt64 in 1...5 {
                var track = PressureTrack(segments: [
                    .init(seconds: 20, walking: true), .stairs(floors: 3, rate: rate), .init(seconds: 15, walking: true),
                    .stairs(floors: -2, rate: rate), .init(seconds: 20, walking: true)])
                track.seed = seed
                let counter = count(track)
                XCTAssertEqual(counter.ascended, 3, "stairs at \(rate) m/s, seed \(seed)")
                XCTAssertEqual(counter.descended, 2, "stairs at \(rate) m/s, seed \(seed)")
                XCTAssertEqual(counter.relativeAltitudeMeters ?? .nan, 3, accuracy: 0.5)
            }
        }
    }

    func testIrregularReadingsLoseNoHeight() {
        // A polled sensor read late now and then, and a track that stalls and catches up (a loaded machine):
        // the median's window holds more or fewer readings from one reading to the next.
        for seed: UInt64 in 1...10 {
            var track = PressureTrack(segments: [.init(seconds: 5, walking: true), .stairs(floors: 3, rate: 0.6),
                                                 .init(seconds: 4, walking: true), .stairs(floors: -2, rate: 0.6),
                                                 .init(seconds: 10, walking: true)])
            track.seed = seed
            var jitter = SplitMix(seed: seed)
            let readings = track.readings(rateHz: 4).enumerated().map { i, r in
                PressureReading(time: Double(i) * 0.25 + jitter.uniform(0, 0.24), kilopascal: r.kilopascal)
            }
            let counter = FloorCounter.counting(stepTimes: track.stepTimes(), pressure: readings)
            XCTAssertEqual(counter.ascended, 3, "seed \(seed)")
            XCTAssertEqual(counter.descended, 2, "seed \(seed)")
        }
    }

    /// The sensor counter mode reads the barometer with the counter, every 2 s while walking and a little later
    /// now and then: three or four readings in the 6 s median's window, never one 4.8 s older than the newest.
    /// The stairs still count, and a door slam still does not.
    func testReadingsEveryTwoSecondsCountTheStairsAndNotASlam() {
        for rate in [0.3, 0.6] {
            for seed: UInt64 in 1...5 {
                var track = PressureTrack(segments: [
                    .init(seconds: 16, walking: true), .stairs(floors: 3, rate: rate), .init(seconds: 10, walking: true),
                    .stairs(floors: -2, rate: rate), .init(seconds: 20, walking: true)])
                track.seed = seed
                track.spikes = [Spike(start: track.duration - 12, seconds: 2, pascal: 30)]
                let fine = track.readings(rateHz: 20)
                var jitter = SplitMix(seed: seed)
                var readings: [PressureReading] = []
                var t = 0.0
                while let reading = fine.first(where: { $0.time >= t }) {
                    readings.append(PressureReading(time: reading.time, kilopascal: reading.kilopascal))
                    t = reading.time + 2 + jitter.uniform(0, 0.1)
                }
                let counter = FloorCounter.counting(stepTimes: track.stepTimes(), pressure: readings)
                XCTAssertEqual(counter.ascended, 3, "stairs at \(rate) m/s, seed \(seed)")
                XCTAssertEqual(counter.descended, 2, "stairs at \(rate) m/s, seed \(seed)")
            }
        }
    }

    /// A still wearer's barometer is read once per 5 s batch: two readings in the 6 s median's window. The
    /// median takes the last three, so `relative_altitude_m` follows an elevator ride while the wearer stands,
    /// and no floor is counted.
    func testReadingsEveryFiveSecondsWhileStillFollowTheHeight() {
        for seed: UInt64 in 1...5 {
            var track = PressureTrack(segments: [
                .init(seconds: 30, walking: false), .elevator(floors: 3, rate: 1), .init(seconds: 30, walking: false)])
            track.seed = seed
            let fine = track.readings(rateHz: 20)
            var jitter = SplitMix(seed: seed)
            var readings: [PressureReading] = []
            var t = 0.0
            while let reading = fine.first(where: { $0.time >= t }) {
                readings.append(PressureReading(time: reading.time, kilopascal: reading.kilopascal))
                t = reading.time + 5 + jitter.uniform(0, 0.1)
            }
            let counter = FloorCounter.counting(stepTimes: track.stepTimes(), pressure: readings)
            XCTAssertEqual(counter.relativeAltitudeMeters ?? .nan, 9, accuracy: 1, "seed \(seed)")
            XCTAssertEqual(counter.ascended + counter.descended, 0, "seed \(seed)")
        }
    }

    func testLandingsBetweenFlightsLoseNothing() {
        // Two flights a floor with a 3 s landing between them, slowly.
        var segments: [PressureTrack.Segment] = [.init(seconds: 10, walking: true)]
        for _ in 0..<3 {
            segments += [.init(seconds: 10, climb: 1.5, walking: true), .init(seconds: 3, walking: true)]
            segments += [.init(seconds: 10, climb: 1.5, walking: true), .init(seconds: 3, walking: true)]
        }
        segments.append(.init(seconds: 15, walking: true))
        XCTAssertEqual(count(PressureTrack(segments: segments)).ascended, 3)
    }

    func testAnElevatorRideCountsNothing() {
        let track = PressureTrack(segments: [
            .init(seconds: 15, walking: true), .init(seconds: 4, walking: false), .elevator(floors: 3),
            .init(seconds: 4, walking: false), .init(seconds: 15, walking: true), .init(seconds: 4, walking: false),
            .elevator(floors: -3, rate: 2.5), .init(seconds: 15, walking: true)])
        let counter = count(track)
        XCTAssertEqual(counter.ascended, 0)
        XCTAssertEqual(counter.descended, 0)
        XCTAssertEqual(counter.relativeAltitudeMeters ?? .nan, 0, accuracy: 0.5, "the height is there, only not walked")
    }

    func testAnElevatorLeftAtOnceCountsNothing() {
        // Walking out the moment the doors open: the ride's last seconds are inside the slope window.
        let track = PressureTrack(segments: [
            .init(seconds: 10, walking: false), .elevator(floors: 4, rate: 1.0), .init(seconds: 20, walking: true)])
        XCTAssertEqual(count(track).ascended, 0)
    }

    func testDoorSlamsAndGustsWhileWalkingCountNothing() {
        var track = PressureTrack(segments: [.init(seconds: 120, walking: true)])
        track.spikes = [Spike(start: 20, seconds: 2, pascal: 30), Spike(start: 50, seconds: 2, pascal: -30),
                        Spike(start: 80, seconds: 2.5, pascal: 40)]
        let counter = count(track)
        XCTAssertEqual(counter.ascended + counter.descended, 0)
    }

    func testWeatherDriftOverHoursOfWalkingCountsNothing() {
        // Three hours of walking while the pressure falls 1 hPa an hour (25 m of apparent height), then rises.
        var down = PressureTrack(segments: [.init(seconds: 3 * 3600, walking: true)])
        down.driftPascalPerSecond = -PressureTrack.weatherDriftPascalPerSecond
        var up = down
        up.driftPascalPerSecond = PressureTrack.weatherDriftPascalPerSecond
        for track in [down, up] {
            let counter = count(track, rateHz: 1)
            XCTAssertEqual(counter.ascended + counter.descended, 0, "drift \(track.driftPascalPerSecond) Pa/s")
        }
    }

    func testDriftDoesNotAddUpAcrossClimbs() {
        // Half a floor at a time, an hour apart, with the weather falling: no floor is ever completed.
        var segments: [PressureTrack.Segment] = []
        for _ in 0..<4 { segments += [.init(seconds: 900, walking: true), .stairs(floors: 1, floorHeight: 1.4, rate: 0.3)] }
        XCTAssertEqual(count(PressureTrack(segments: segments), rateHz: 2).ascended, 0)
    }

    func testNothingCountsWithoutSteps() {
        // A car up a hill: 30 m in a minute, nobody walking.
        let track = PressureTrack(segments: [.init(seconds: 10, walking: false),
                                             .init(seconds: 60, climb: 30, walking: false), .init(seconds: 10, walking: false)])
        XCTAssertEqual(count(track).ascended, 0)
    }

    func testResetCountsFromZeroAndTheHeightFromHere() {
        let track = PressureTrack(segments: [.init(seconds: 10, walking: true), .stairs(floors: 2, rate: 0.4),
                                             .init(seconds: 10, walking: true)])
        var counter = count(track)
        XCTAssertEqual(counter.ascended, 2)
        counter.reset()
        XCTAssertEqual(counter.ascended, 0)
        XCTAssertEqual(counter.relativeAltitudeMeters, 0)
    }

    func testImpossiblePressuresAreIgnored() {
        var counter = FloorCounter()
        for (i, p) in [101.0, .nan, 0, 500, -3, .infinity].enumerated() {
            counter.update(time: Double(i), pressureKilopascal: p, walking: true)
        }
        XCTAssertNil(counter.relativeAltitudeMeters)
        XCTAssertEqual(counter.ascended + counter.descended, 0)
    }

    private typealias Spike = PressureTrack.Spike
}
