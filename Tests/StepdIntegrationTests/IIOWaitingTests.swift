import Foundation
import XCTest
@testable import StepAcquisition
import StepProcessing

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
            usleep(200_000)  // the interval of a watch over a span (the behaviour), not a wait for an event
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
        try waitForLog("iio watch: a device event", in: { fake.log })
        try waitForLog("buffered capture at 62.5 Hz", in: { fake.log })  // the rate choice is logged

        try daemon.waitUntil(timeout: 60, "steps from the device") { _ in
            (try daemon.steps()["steps"] as? Int ?? 0) > 10
        }
        XCTAssertEqual(fake.terminate(), 0)
    }
}

/// A device appears before udev has given it to group stepd (60-stepd.rules): the daemon, not root, is refused its
/// node and attributes for a moment. That is a wait (a notice), not a fault (a warning in the journal), as long as
/// it does not last; the device is read once udev has done its work.
final class IIOPermissionWaitTests: XCTestCase {
    func testADeviceNotYetGivenToTheDaemonIsWaitedForWithoutAWarningThenRead() throws {
        try Unprivileged.requireTools()
        let device: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording, "trigger": true,
                                     "sampling_frequency_available": [25, 50, 62.5, 100, 200]]
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o777)   // the daemon runs as nobody: its socket and state are made there
        let socket = directory.file("stepd.sock")
        let fake = try FakeIIO(devices: [device], speed: 4,
                               command: ["/usr/bin/setpriv"] + Unprivileged.asUser(Unprivileged.nobody, [
                                   Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state"), "--no-gps"]),
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        let refused = try daemon.waitUntil(timeout: 20, "waiting for udev") {
            $0.sourceState == "waiting" && ($0.sourceError ?? "").contains("waiting for udev")
        }
        XCTAssertEqual(refused["samples_in"] as? Int, 0, "\(refused)")

        try fake.control("grant iio:device0")
        try daemon.waitUntil(timeout: 10, "samples once udev has given the device") {
            $0.sourceState == "running" && ($0["samples_in"] as? Int ?? 0) > 0
        }
        let warnings = fake.log.split(separator: "\n").filter { $0.contains(" warning ") || $0.contains(" error ") }
        XCTAssertEqual(warnings, [], "a refusal while udev works is no warning:\n\(fake.log)")
        XCTAssertEqual(fake.terminate(), 0)
    }

    /// The grace is for udev only: a refusal that lasts is `unavailable`, with what to do.
    func testARefusalThatLastsIsAFaultThatSaysWhatToDo() {
        let refusal = IIOError.notPermitted(device: "iio:device0 (bmi160)", what: "cannot open /dev/iio:device0",
                                            reason: "Permission denied (13)")
        let early = IIOSensorRetry.state(for: refusal, missing: false, sinceAppeared: 1.5)
        XCTAssertEqual(early.name, "waiting")
        let late = IIOSensorRetry.state(for: refusal, missing: false,
                                                sinceAppeared: IIOSensorRetry.udevGraceSeconds + 0.1)
        XCTAssertEqual(late.name, "unavailable")
        XCTAssertTrue(late.reason?.contains("group stepd") ?? false, "\(late)")
        let busy = IIOSensorRetry.state(for: .deviceBusy(device: "d", path: "/dev/iio:device0"), missing: false,
                                                sinceAppeared: 0.5)
        XCTAssertEqual(busy.name, "busy", "only a refusal of permission is waited for")
    }
}
