import XCTest
@testable import StepAcquisition

/// The sampling frequency stepd asks an IIO accelerometer for, and the words it uses for a device.
final class IIORateChoiceTests: XCTestCase {
    func testChoosesTheSmallestRateAtOrAbove60Hz() {
        XCTAssertEqual(IIODiscovery.chooseRate(from: [12.5, 25, 50, 62.5, 100, 200]), 62.5)
        XCTAssertEqual(IIODiscovery.chooseRate(from: [200, 60, 100]), 60)
        XCTAssertEqual(IIODiscovery.chooseRate(from: [1600, 100]), 100)
    }

    func testChoosesTheHighestWhenNoneReaches60Hz() {
        XCTAssertEqual(IIODiscovery.chooseRate(from: [12.5, 25, 50]), 50)
        XCTAssertNil(IIODiscovery.chooseRate(from: []))
    }

    func testADeviceMatchesByIdNameOrLabel() {
        let d = AccelerometerDescription(id: "iio:device2", name: "bmi160", label: "accel-display", buffered: true,
                                         hasTimestamp: true, hasStepCounter: false, ratesHz: [], rateHz: nil,
                                         mountMatrix: nil, trigger: nil)
        XCTAssertTrue(d.matches("iio:device2"))
        XCTAssertTrue(d.matches("bmi160"))
        XCTAssertTrue(d.matches("accel-display"))
        XCTAssertFalse(d.matches("iio:device0"))
        XCTAssertEqual(d.displayName, "iio:device2 (bmi160, label accel-display)")
    }

    func testErrorsReadAsOneSentenceNamingWhatWasFound() {
        XCTAssertEqual(IIOError.noAccelerometer(uri: "local:", found: ["iio:device0 (lm75: temp)"]).description,
                       "no IIO accelerometer at 'local:': found only iio:device0 (lm75: temp)")
        XCTAssertTrue(IIOError.deviceBusy(device: "iio:device0 (bmi160)", path: "/dev/iio:device0").description
            .contains("iio-sensor-proxy"))
    }
}
