import Foundation
import StepProcessing
import TestSupport
import XCTest

/// Adaptive batching on a fake bmi160 read by the real libiio: a day of still and walking stretches (the still ones
/// made from physics: gravity and the BMI160's white noise, the walking ones from data/walk-inhand.csv.gz) is read
/// with a 5 s buffer while the wearer sits and the walking one (0.67 s) while they walk, and the daemon counts
/// exactly the steps `stepd analyze` counts in the samples it was fed.
final class IIOStillBatchingTests: XCTestCase {
    /// Still 12 s, walk 30 s, still 12 s, walk 30 s (the walk's next 30 s): each still stretch is long enough for
    /// the daemon to batch slowly (4 quiet seconds, then 5 s buffers) and the walking ones for bouts of steps.
    private func writeDay(to path: String) throws {
        let walk = try runCommand("/bin/gzip", ["-dc", Binaries.bundledRecording])
        XCTAssertEqual(walk.status, 0, walk.stderr)
        let rows: [(Double, String)] = walk.stdout.split(separator: "\n").dropFirst().compactMap { line in
            guard let comma = line.firstIndex(of: ","), let t = Double(line[..<comma]) else { return nil }
            return (t, String(line[line.index(after: comma)...]))
        }
        var rng = SplitMix(seed: 29)
        // BMI160: 180 ug/sqrt(Hz) over the 31.25 Hz band of 62.5 Hz = 1.0 mg per axis; tilted 10 degrees, at rest.
        let sigma = 180e-6 * 9.80665 * 31.25.squareRoot()
        let gy = 9.80665 * sin(Double.pi / 18), gz = 9.80665 * cos(Double.pi / 18)
        var out = "t,x,y,z\n"
        var t = 0.0
        func still(_ seconds: Double) {
            for _ in 0..<Int(seconds * 100) {
                out += String(format: "%.4f,%.5f,%.5f,%.5f\n", t, sigma * rng.gaussian(), gy + sigma * rng.gaussian(),
                              gz + sigma * rng.gaussian())
                t += 0.01
            }
        }
        func walking(from start: Double, seconds: Double) {
            for (time, values) in rows where time >= start && time < start + seconds {
                out += String(format: "%.4f,", t) + values + "\n"
                t += 0.01
            }
        }
        still(12)
        walking(from: 0, seconds: 30)
        still(12)
        walking(from: 30, seconds: 30)
        try out.write(toFile: path, atomically: true, encoding: .utf8)
    }

    func testStillStretchesAreReadInLongBatchesAndTheCountIsAnalyzesExactly() throws {
        try FakeIIO.requireNamespaces()
        let directory = try TemporaryDirectory()
        let day = directory.file("day.csv")
        try writeDay(to: day)
        let socket = directory.file("stepd.sock")
        // `hold`: the day plays only while the buffer is enabled, so that a daemon slow to start or to make its
        // buffer anew on a loaded machine (seconds of the day at 4x) still sees each stretch whole.
        let device: [String: Any] = ["name": "bmi160", "recording": day, "trigger": true, "format": "le:s16/16>>0",
                                     "once": true, "hold": true, "sampling_frequency_available": [12.5, 25, 62.5, 125, 250]]
        let fake = try FakeIIO(devices: [device], speed: 4,
                               command: [Binaries.stepd, "--socket", socket, "--state-dir", directory.file("state")],
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        // Until the feed has ended (the recording played once) and the daemon has taken what it will take.
        var last = (-1, -1), stableSince = Date()
        let status = try daemon.waitUntil(timeout: 60, "the feed to end and the daemon to take every sample") { status in
            let now = (fake.dumpedSampleCount(), status["samples_in"] as? Int ?? -1)
            if now != last { last = now; stableSince = Date() }
            return fake.log.contains("the recording played once") && Date().timeIntervalSince(stableSince) > 2
        }
        XCTAssertEqual(status.sourceKind, "iio-buffer")
        // fake-iio's own lines ("buffer off after N scans (D dropped, ..."), not the daemon's, which the log holds too.
        let dropped = fake.log.split(separator: "\n").compactMap { line -> Int? in
            guard line.contains("buffer off after"), let range = line.range(of: " scans (") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        XCTAssertEqual(dropped.reduce(0, +), 0, "scans the fake device dropped, its FIFO full: \(fake.log)")
        XCTAssertGreaterThan(fake.dumpedSampleCount(), 5000, "the day's 84 s at 62.5 Hz were read: \(fake.log)")
        XCTAssertEqual(status["samples_in"] as? Int, fake.dumpedSampleCount(), "every sample fed was taken, and only those: \(fake.log)")
        let live = try XCTUnwrap(try daemon.steps()["steps"] as? Int)
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", fake.dumpFile()])
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let offline = try XCTUnwrap(object["steps"] as? Int)
        XCTAssertGreaterThan(offline, 80)
        XCTAssertEqual(live, offline, "the daemon's count against analyze's of the samples it was fed")

        // The buffers the fake device was given, in order: walking (42 scans at 62.5 Hz), 5 s still (313), and back.
        let watermarks = fake.log.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: "watermark ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        XCTAssertEqual(watermarks.first, 42, fake.log)
        let switches = zip(watermarks, watermarks.dropFirst()).filter { $0 != $1 }.map { "\($0)->\($1)" }
        XCTAssertEqual(switches, ["42->313", "313->42", "42->313", "313->42"], fake.log)
        XCTAssertEqual(fake.terminate(), 0)
    }
}
