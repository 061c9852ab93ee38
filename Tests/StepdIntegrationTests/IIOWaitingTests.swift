import Foundation
import XCTest

/// A daemon started with no accelerometer counts nothing, says it waits, and picks up one that appears later
/// (a fake IIO device plugged into its mount namespace) within 2 s, without a restart and without looking for
/// one every second meanwhile.
final class IIOWaitingTests: XCTestCase {
    func testNoAccelerometerWaitsWithZeroStepsThenCountsFromADeviceThatAppears() throws {
        let device: [String: Any] = ["name": "bmi160", "label": "accel-base", "recording": Binaries.bundledRecording,
                                     "trigger": true, "absent": true,
                                     "sampling_frequency_available": [25, 50, 62.5, 100, 200]]
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        // No --replay, no --demo, no --device: what the installed service runs.
        let fake = try FakeIIO(devices: [device], speed: 4,
                               command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"),
                                         "--log-level", "trace"],
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()

        let waiting = try daemon.waitUntil(timeout: 30, "waiting") { $0.sourceState == "waiting" }
        XCTAssertEqual(waiting.sourceKind, "iio")
        XCTAssertTrue(waiting.sourceError?.contains("no IIO accelerometer") ?? false, "\(waiting)")
        XCTAssertNotNil(waiting["gps"], "GPS is still served")
        XCTAssertNotNil(waiting["store"], "the history is still served")

        // Watched for 3 s: still waiting, nothing counted, and no look every second (one look, maybe a second
        // if a device event came).
        let looksBefore = fake.log.components(separatedBy: "looking for an accelerometer").count - 1
        let watchedUntil = Date().addingTimeInterval(3)
        let client = try daemon.connect()
        while Date() < watchedUntil {
            let status = try client.request(["cmd": "status"])
            XCTAssertEqual(status.sourceState, "waiting")
            XCTAssertEqual(status["samples_in"] as? Int, 0)
            XCTAssertEqual(try client.request(["cmd": "steps"])["steps"] as? Int, 0, "no invented steps")
            usleep(200_000)
        }
        let looksAfter = fake.log.components(separatedBy: "looking for an accelerometer").count - 1
        XCTAssertGreaterThanOrEqual(looksBefore, 1, fake.log)
        XCTAssertLessThanOrEqual(looksAfter - looksBefore, 1, "a busy poll looks every second:\n\(fake.log)")

        let plugged = Date()
        try fake.control("add iio:device0")
        let running = try daemon.waitUntil(timeout: 10, "samples from the device that appeared") {
            $0.sourceState == "running" && ($0["samples_in"] as? Int ?? 0) > 0
        }
        let pickedUp = Date().timeIntervalSince(plugged)
        XCTAssertLessThan(pickedUp, 2, "picked up \(String(format: "%.2f", pickedUp)) s after it appeared")
        XCTAssertEqual(running.sourceKind, "iio-buffer")
        XCTAssertEqual(running.sourceDescription, "iio:device0 (bmi160, label accel-base)")
        XCTAssertTrue(fake.log.contains("iio watch: a device event"), fake.log)
        XCTAssertTrue(fake.log.contains("buffered capture at 62.5 Hz"), "the rate choice is logged: \(fake.log)")

        try daemon.waitUntil(timeout: 60, "steps from the device") { _ in
            (try daemon.steps()["steps"] as? Int ?? 0) > 10
        }
        XCTAssertEqual(fake.terminate(), 0)
    }
}
