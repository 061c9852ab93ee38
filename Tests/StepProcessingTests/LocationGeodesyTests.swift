import Foundation
import XCTest
@testable import StepProcessing

final class LocationGeodesyTests: XCTestCase {
    func testOneDegreeOfLatitudeIsEarthRadiusTimesPiOver180() {
        let d = Geodesy.distanceMeters(Coordinate(latitudeDegrees: 10, longitudeDegrees: 20),
                                       Coordinate(latitudeDegrees: 11, longitudeDegrees: 20))
        XCTAssertEqual(d, Geodesy.earthRadiusMeters * .pi / 180, accuracy: 1e-6)
    }

    func testHaversineMatchesKnownCityDistance() {
        // Paris Notre-Dame to London St Paul's: 343.5 km on the sphere of mean radius (Vincenty on
        // WGS-84 gives 343.9 km; the sphere is within its stated 0.5 %).
        let paris = Coordinate(latitudeDegrees: 48.8530, longitudeDegrees: 2.3498)
        let london = Coordinate(latitudeDegrees: 51.5138, longitudeDegrees: -0.0984)
        XCTAssertEqual(Geodesy.distanceMeters(paris, london) / 1000, 343.9, accuracy: 343.9 * 0.005)
    }

    func testDestinationThenDistanceRoundTrips() {
        let start = Coordinate(latitudeDegrees: -37.7848, longitudeDegrees: 175.3149)
        for bearing in stride(from: 0.0, to: 360, by: 45) {
            let end = Geodesy.destination(from: start, distanceMeters: 400, bearingDegrees: bearing)
            XCTAssertEqual(Geodesy.distanceMeters(start, end), 400, accuracy: 1e-6)
        }
    }

    func testShortHopsAreNotLostToRounding() {
        let a = Coordinate(latitudeDegrees: 51.752, longitudeDegrees: -1.2577)
        let b = Geodesy.destination(from: a, distanceMeters: 0.01, bearingDegrees: 90)
        XCTAssertEqual(Geodesy.distanceMeters(a, b), 0.01, accuracy: 1e-6)
    }

    func testDestinationWrapsAcrossTheAntimeridian() {
        let a = Coordinate(latitudeDegrees: 0, longitudeDegrees: 179.9999)
        let b = Geodesy.destination(from: a, distanceMeters: 100, bearingDegrees: 90)
        XCTAssertLessThan(b.longitudeDegrees, -179.99)
        XCTAssertEqual(Geodesy.distanceMeters(a, b), 100, accuracy: 1e-6)
    }

    func testLocalOffsetsRoundTrip() {
        let origin = Coordinate(latitudeDegrees: 51.752, longitudeDegrees: -1.2577)
        let p = Geodesy.coordinate(east: 30, north: -40, from: origin)
        let o = Geodesy.offsetMeters(of: p, from: origin)
        XCTAssertEqual(o.east, 30, accuracy: 1e-9)
        XCTAssertEqual(o.north, -40, accuracy: 1e-9)
        XCTAssertEqual(Geodesy.distanceMeters(origin, p), 50, accuracy: 0.01)
    }

    func testAccuracyClassIsHighUnderFifteenMetres() {
        XCTAssertEqual(AccuracyClass(ephMeters: 14.9), .high)
        XCTAssertEqual(AccuracyClass(ephMeters: 15), .medium)
        XCTAssertEqual(AccuracyClass(ephMeters: 49.9), .medium)
        XCTAssertEqual(AccuracyClass(ephMeters: 50), .low)
        XCTAssertEqual(AccuracyClass(ephMeters: nil), .unknown)
        XCTAssertEqual(AccuracyClass(ephMeters: .nan), .unknown)
    }

    func testModeFollowsGpsdNumbers() {
        XCTAssertEqual(FixMode(gpsdMode: 0), .noFix)
        XCTAssertEqual(FixMode(gpsdMode: 1), .noFix)
        XCTAssertEqual(FixMode(gpsdMode: 2), .twoD)
        XCTAssertEqual(FixMode(gpsdMode: 3), .threeD)
    }
}

/// Builds fixes along a line for the location tests.
enum FixFactory {
    static let origin = Coordinate(latitudeDegrees: 51.752, longitudeDegrees: -1.2577)
    static let t0 = Date(timeIntervalSince1970: 1_714_557_600)  // 2024-05-01T10:00:00Z

    static func fix(second: Double, east: Double = 0, north: Double = 0, eph: Double? = 3,
                    mode: FixMode = .threeD) -> Fix {
        let c = Geodesy.coordinate(east: east, north: north, from: origin)
        return Fix(time: t0.addingTimeInterval(second), mode: mode, latitudeDegrees: c.latitudeDegrees,
                   longitudeDegrees: c.longitudeDegrees, altitudeMSLMeters: 60, ephMeters: eph, satellitesUsed: 9,
                   arrival: t0.addingTimeInterval(second))
    }
}
