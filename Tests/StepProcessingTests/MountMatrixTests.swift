import XCTest
@testable import StepProcessing
import Foundation

final class MountMatrixTests: XCTestCase {
    func testParsesTheSysfsTextAndPrintsItBack() throws {
        let m = try MountMatrix(parsing: "0, 1, 0; -1, 0, 0; 0, 0, 1")
        XCTAssertEqual(m.rows[0], Vector3(x: 0, y: 1, z: 0))
        XCTAssertEqual(m.rows[1], Vector3(x: -1, y: 0, z: 0))
        XCTAssertEqual(m.description, "0, 1, 0; -1, 0, 0; 0, 0, 1")
        XCTAssertFalse(m.isIdentity)
        XCTAssertTrue(try MountMatrix(parsing: "1, 0, 0; 0, 1, 0; 0, 0, 1").isIdentity)
    }

    func testAcceptsFractionsAndSpacing() throws {
        let m = try MountMatrix(parsing: " 0.7071, -0.7071, 0;0.7071,0.7071,0 ; 0, 0, 1\n")
        XCTAssertEqual(m.rows[0].x, 0.7071, accuracy: 1e-12)
        XCTAssertEqual(m.determinant, 1, accuracy: 1e-3)
    }

    func testRotatesChipAxesOntoTheBoardAxes() throws {
        // Chip x points along the board's -y: gravity the chip feels on +x is the board's -y.
        let m = try MountMatrix(parsing: "0, 1, 0; -1, 0, 0; 0, 0, 1")
        XCTAssertEqual(m.apply(Vector3(x: 9.8, y: 0, z: 0)), Vector3(x: 0, y: -9.8, z: 0))
        XCTAssertEqual(m.apply(Vector3(x: 0, y: 9.8, z: 0)), Vector3(x: 9.8, y: 0, z: 0))
        XCTAssertEqual(m.apply(Vector3(x: 1, y: 2, z: 3)), Vector3(x: 2, y: -1, z: 3))
        XCTAssertEqual(MountMatrix.identity.apply(Vector3(x: 1, y: 2, z: 3)), Vector3(x: 1, y: 2, z: 3))
    }

    func testRefusesMalformedAndSingularMatrices() {
        XCTAssertThrowsError(try MountMatrix(parsing: "1, 0; 0, 1")) { error in
            XCTAssertEqual(error as? MountMatrixError, .malformed(text: "1, 0; 0, 1"))
            XCTAssertTrue("\(error)".contains("three rows of three numbers"))
        }
        XCTAssertThrowsError(try MountMatrix(parsing: "1, 0, 0; 0, 1, 0; 0, 0, x"))
        XCTAssertThrowsError(try MountMatrix(parsing: "1, 0, 0; 0, 1, 0; 0, 0, 1; 0, 0, 0"))
        XCTAssertThrowsError(try MountMatrix(parsing: "1, 0, 0; 0, 1, 0; 0, 0, 0")) { error in
            XCTAssertEqual(error as? MountMatrixError, .singular(text: "1, 0, 0; 0, 1, 0; 0, 0, 0"))
        }
    }
}

final class SampleValidatorTests: XCTestCase {
    func testAllZeroIsAGlitch() {
        let v = SampleValidator()
        XCTAssertEqual(v.check(Vector3.zero), .allZero)
        XCTAssertEqual(v.check(Vector3(x: 0, y: 0, z: 9.8)), .valid)
    }

    func testValuesAtTheRailOrPast16gAreOutOfRange() {
        let chip = SampleValidator(fullScaleMetersPerSecondSquared: 78.45)   // a ±8 g chip
        XCTAssertEqual(chip.check(Vector3(x: 78.45, y: 0, z: 1)), .outOfRange)
        XCTAssertEqual(chip.check(Vector3(x: 1, y: -80, z: 1)), .outOfRange)
        XCTAssertEqual(chip.check(Vector3(x: 78.4, y: 0, z: 1)), .valid)
        let unknown = SampleValidator()
        XCTAssertEqual(unknown.limitMetersPerSecondSquared, 16 * standardGravity, accuracy: 1e-12)
        XCTAssertEqual(unknown.check(Vector3(x: 0, y: 0, z: 16 * standardGravity)), .outOfRange)
        XCTAssertEqual(unknown.check(Vector3(x: 0, y: 0, z: 100)), .valid)
        XCTAssertEqual(SampleValidator(fullScaleMetersPerSecondSquared: 1e9).limitMetersPerSecondSquared,
                       16 * standardGravity, accuracy: 1e-12)
    }

    func testNonFiniteValuesAreRejected() {
        XCTAssertEqual(SampleValidator().check(Vector3(x: .nan, y: 0, z: 9.8)), .notFinite)
        XCTAssertEqual(SampleValidator().check(Vector3(x: 0, y: .infinity, z: 9.8)), .notFinite)
    }

    func testTimeMustIncreaseAndRejectionsAreCounted() {
        var v = SampleValidator()
        let g = Vector3(x: 0, y: 0, z: 9.8)
        let kept = v.filter([Sample(time: 1, acceleration: g), Sample(time: 1, acceleration: g),
                             Sample(time: 0.5, acceleration: g), Sample(time: 1.1, acceleration: .zero),
                             Sample(time: 1.2, acceleration: g)])
        XCTAssertEqual(kept.map(\.time), [1, 1.2])
        XCTAssertEqual(v.rejected, 3)
    }
}
