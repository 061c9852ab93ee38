import Foundation
import XCTest

/// stepd reading fake IIO accelerometers through the real libiio: buffered and polled capture, scan formats,
/// mount matrix, device choice, faults and the hardware step counter.
final class IIODaemonTests: XCTestCase {
    private var recording: String { Binaries.bundledRecording }
    private var groundTruth: String { Binaries.repository.appendingPathComponent("data/walk-inhand.steps.csv").path }

    private func bmi160(_ extra: [String: Any] = [:]) -> [String: Any] {
        var device: [String: Any] = ["name": "bmi160", "label": "accel-base", "recording": recording,
                                     "trigger": true, "format": "le:s16/16>>0",
                                     "sampling_frequency_available": [25, 50, 62.5, 100, 200]]
        device.merge(extra) { $1 }
        return device
    }

    private func analyze(_ file: String) throws -> Int {
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", file])
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return try XCTUnwrap(object["steps"] as? Int)
    }

    private func startDaemon(devices: [[String: Any]], speed: Double = 1, arguments: [String] = []) throws -> FakeIIODaemon {
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let fake = try FakeIIO(devices: devices, speed: speed,
                               command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state")] + arguments,
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        return daemon
    }

    // MARK: The fake tree is realistic

    func testIIOInfoListsTheFakeDeviceAndReadDevReadsItsScans() throws {
        let devices = [bmi160(["mount_matrix": [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]])]
        let info = try FakeIIO.run(devices: devices, command: ["iio_info"])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertTrue(info.stdout.contains("iio:device0: bmi160 (label: accel-base) (buffer capable)"), info.stdout)
        XCTAssertTrue(info.stdout.contains("accel_x:  (input, index: 0, format: le:S16/16>>0)"), info.stdout)
        XCTAssertTrue(info.stdout.contains("timestamp:  (input, index: 3, format: le:S64/64>>0)"), info.stdout)
        XCTAssertTrue(info.stdout.contains("mount_matrix value: 0, 1, 0; -1, 0, 0; 0, 0, 1"), info.stdout)
        XCTAssertTrue(info.stdout.contains("trigger0: bmi160-dev0"), info.stdout)

        // iio_readdev takes 32 scans of 16 bytes (3 x s16, padding, s64 timestamp) from the FIFO.
        let scratch = try TemporaryDirectory()
        let out = scratch.file("scans.bin")
        let read = try FakeIIO.run(devices: devices, command: [
            "sh", "-c", "iio_readdev -t bmi160-dev0 -b 16 -s 32 iio:device0 accel_x accel_y accel_z timestamp > \(out)"])
        XCTAssertEqual(read.status, 0, read.stderr)
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        XCTAssertEqual(data.count, 32 * 16)
        let stamps = (0..<32).map { i in data[(i * 16 + 8)..<(i * 16 + 16)].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) } }
        XCTAssertEqual(stamps, stamps.sorted(), "timestamps increase")
        XCTAssertGreaterThan(stamps[31] - stamps[0], 0)
    }

    // MARK: Buffered capture

    func testBufferedReplayWithTimestampsCountsLikeOfflineAnalysisAndReadsTheHardwareCounter() throws {
        let daemon = try startDaemon(devices: [bmi160(["once": true, "glitch_every": 97, "steps": groundTruth])], speed: 5)
        let status = try daemon.waitForAllSamples(timeout: 90)
        XCTAssertEqual(status.sourceKind, "iio-buffer")
        XCTAssertEqual(status.sourceDescription, "iio:device0 (bmi160, label accel-base)")
        let steps = try daemon.steps()
        let offline = try analyze(daemon.fake.dumpFile())
        XCTAssertGreaterThan(offline, 150)
        let live = try XCTUnwrap(steps["steps"] as? Int)
        XCTAssertLessThanOrEqual(abs(live - offline), 1, "daemon \(live) vs analyze \(offline); glitches must not count")
        // The chip's own counter (here: the recording's ground truth as fed so far), read at most once a second
        // while scans come, and then while none comes: the walk's 182 steps, all of them.
        XCTAssertNotNil(steps["hardware_steps"] as? Int, "hardware_steps in STEPS: \(steps)")
        var hardware = -1
        try pollUntil("the chip's counter read after the last scans", timeout: 20, every: 0.2,
                      detail: "\(hardware); \(daemon.fake.log)") {
            hardware = try daemon.steps()["hardware_steps"] as? Int ?? -1
            return hardware == 182
        }
        try waitForLog("62.5 Hz", in: { daemon.fake.log })  // the smallest rate >= 60
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }

    /// Two accelerometers: one chosen by name (big-endian 20-bit in 32, shifted, no timestamp, rotated on the
    /// board), the other by label (polling only). Each daemon reads its own device.
    func testTwoAccelerometersChosenByNameAndLabelBigEndianRotatedAndPolled() throws {
        let rotation = [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]   // chip x is the board's -y
        let devices: [[String: Any]] = [
            ["name": "adxl355", "recording": recording, "start_s": 20, "end_s": 45, "once": true,
             "format": "be:s20/32>>12", "scale": 0.0000382, "timestamp": false, "mount_matrix": rotation,
             "sampling_frequency_available": [31.25, 62.5, 125, 250]],
            ["name": "lis3dh", "label": "lid", "recording": recording, "start_s": 20, "end_s": 45, "once": true,
             "buffered": false, "sampling_frequency": 100],
        ]
        let directory = try TemporaryDirectory()
        let (a, b) = (directory.file("a.sock"), directory.file("b.sock"))
        let script = "trap 'kill $p $q; wait; exit 0' TERM; \(Binaries.stepd) --device adxl355 --socket \(a) "
            + "--state-dir \(directory.file("state-a")) & p=$!; "
            + "\(Binaries.stepd) --device lid --socket \(b) --state-dir \(directory.file("state-b")) & q=$!; wait"
        let fake = try FakeIIO(devices: devices, command: ["sh", "-c", script], directory: directory)
        let byName = FakeIIODaemon(socketPath: a, fake: fake), byLabel = FakeIIODaemon(socketPath: b, fake: fake)
        try byName.waitForSocket()
        try byLabel.waitForSocket()

        let listing = try FakeIIO.run(devices: devices, command: [Binaries.stepd, "--list-devices"])
        XCTAssertTrue(listing.stdout.contains("iio:device0\n  name:         adxl355"), listing.stdout)
        XCTAssertTrue(listing.stdout.contains("label:        lid"), listing.stdout)
        XCTAssertTrue(listing.stdout.contains("polling (no buffer support)"), listing.stdout)
        XCTAssertTrue(listing.stdout.contains("buffered (no timestamp channel)"), listing.stdout)
        XCTAssertTrue(listing.stdout.contains("mount matrix: 0, 1, 0; -1, 0, 0; 0, 0, 1"), listing.stdout)

        let buffered = try byName.waitForAllSamples(of: "iio:device0", timeout: 60)
        XCTAssertEqual(buffered.sourceKind, "iio-buffer")
        XCTAssertEqual(buffered.sourceDescription, "iio:device0 (adxl355)")
        let offline = try analyze(fake.dumpFile("iio:device0"))
        let live = try XCTUnwrap(try byName.steps()["steps"] as? Int)
        XCTAssertGreaterThan(offline, 30)
        XCTAssertLessThanOrEqual(abs(live - offline), 1, "daemon \(live) vs analyze \(offline)")

        // Gravity in the board's axes: the mean of the last seconds fed, not the chip's rotated view of it.
        let gravity = try XCTUnwrap(buffered["gravity"] as? [Double])
        let samples = try fake.dumpedSamples("iio:device0")
        let tail = samples.filter { $0.t > samples.last!.t - 4 }
        let mean = [tail.map(\.x).reduce(0, +), tail.map(\.y).reduce(0, +), tail.map(\.z).reduce(0, +)].map { $0 / Double(tail.count) }
        let chipView = [-mean[1], mean[0], mean[2]]   // M^T * board
        func distance(_ u: [Double], _ v: [Double]) -> Double { zip(u, v).map { ($0 - $1) * ($0 - $1) }.reduce(0, +).squareRoot() }
        XCTAssertLessThan(distance(gravity, mean), 2.0, "gravity \(gravity) vs board mean \(mean)")
        XCTAssertGreaterThan(distance(gravity, chipView), 4.0, "gravity \(gravity) must not be the chip's \(chipView)")

        let polled = try byLabel.waitUntil(timeout: 60, "the polled feed to end") { _ in
            !fake.log.isEmpty && fake.dumpedSampleCount("iio:device1") >= 2400
        }
        XCTAssertEqual(polled.sourceKind, "iio-poll")
        XCTAssertEqual(polled.sourceDescription, "iio:device1 (lis3dh, label lid)")
        // Polling at 60 Hz samples the 100 Hz device at other instants: close, not identical. The last samples
        // polled are still in the pipeline when the feed ends: wait until they are counted.
        let polledOffline = try analyze(fake.dumpFile("iio:device1"))
        var polledLive = -1
        try pollUntil("the polled count to come within 3 of analyze's \(polledOffline)", timeout: 20, every: 0.2,
                      detail: "polled \(polledLive)") {
            polledLive = try XCTUnwrap(try byLabel.steps()["steps"] as? Int)
            return abs(polledLive - polledOffline) <= 3
        }
        XCTAssertEqual(fake.terminate(), 0)
    }

    // MARK: Faults

    func testRemovalMidStreamIsReportedAndTheDeviceIsReattached() throws {
        let daemon = try startDaemon(devices: [bmi160()], speed: 2)
        try daemon.waitUntil(timeout: 30, "running") { $0.sourceState == "running" && ($0["samples_in"] as? Int ?? 0) > 100 }
        try daemon.fake.control("remove iio:device0")
        let gone = try daemon.waitUntil(timeout: 30, "disconnected") { $0.sourceState == "disconnected" }
        XCTAssertTrue(gone.sourceError?.contains("iio:device0") ?? false, "\(gone)")
        let before = try XCTUnwrap(try daemon.steps()["steps"] as? Int, "STEPS still served while disconnected")
        let samplesBefore = try XCTUnwrap(try daemon.status()["samples_in"] as? Int)
        try daemon.fake.control("add iio:device0")
        try daemon.waitUntil(timeout: 30, "reattached") {
            $0.sourceState == "running" && ($0["samples_in"] as? Int ?? 0) > samplesBefore + 100
        }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try daemon.steps()["steps"] as? Int), before)
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }

    func testBusyDeviceIsReportedWithTheWayOut() throws {
        let daemon = try startDaemon(devices: [bmi160(["busy": true])])
        let status = try daemon.waitUntil(timeout: 30, "busy") { $0.sourceState == "busy" }
        XCTAssertTrue(status.sourceError?.contains("iio-sensor-proxy") ?? false, "\(status)")
        XCTAssertTrue(status.sourceError?.contains("docs/iio.md") ?? false, "\(status)")
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }

    func testNoAccelerometerNamesWhatWasFoundAndTheDaemonWaitsForOne() throws {
        let devices: [[String: Any]] = [
            ["name": "lm75", "accel": false, "extra_files": ["in_temp_input": "23125"]],
            bmi160(["id": "iio:device1", "absent": true]),
        ]
        let daemon = try startDaemon(devices: devices, arguments: ["--iio-uri", "local:"])
        let status = try daemon.waitUntil(timeout: 30, "waiting") { $0.sourceState == "waiting" }
        XCTAssertTrue(status.sourceError?.contains("iio:device0 (lm75: temp)") ?? false, "\(status)")
        try daemon.fake.control("add iio:device1")
        try daemon.waitUntil(timeout: 30, "the accelerometer plugged in later") {
            $0.sourceState == "running" && ($0["samples_in"] as? Int ?? 0) > 0
        }
        XCTAssertEqual(daemon.fake.terminate(), 0)
    }
}
