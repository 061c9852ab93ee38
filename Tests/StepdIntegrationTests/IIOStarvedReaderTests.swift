import Foundation
import StepProtocol
import XCTest

/// A daemon held up (SIGSTOP, as a starved thread on a busy board is) while a fake bmi160 keeps sampling at
/// 100 Hz into a kernel buffer of the length libiio asked for: held up for less than the buffer holds, it
/// loses nothing; held up longer, the scans that came while the buffer was full are gone, as with the kernel's
/// kfifo, and the daemon says so in STATUS and the log, exactly as many as the device dropped, and counts on.
final class IIOStarvedReaderTests: XCTestCase {
    private func lost(_ status: [String: Any]) -> Int? { (status["source"] as? [String: Any])?["samples_lost"] as? Int }

    func testAReaderHeldUpLongerThanItsBufferSaysHowManySamplesWereLost() throws {
        try FakeIIO.requireNamespaces()
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        let device: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording, "trigger": true,
                                     "sampling_frequency_available": [25, 50, 100, 200]]
        let fake = try FakeIIO(devices: [device], command: [Binaries.stepd, "--socket", socket, "--state-dir",
                                                             directory.file("state"), "--no-gps"], directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        defer { _ = fake.terminate() }
        try daemon.waitForSocket()
        try daemon.waitUntil(timeout: 30, "the walk to be counted") { status in
            status.sourceState == "running" && (status["samples_in"] as? Int ?? 0) > 300
        }
        XCTAssertEqual(lost(try daemon.status()), 0)
        let pid = try daemon.processID()

        // Held up for 3 s: the kernel's buffer (10 s of scans) holds them all.
        let before = try XCTUnwrap(try daemon.status()["samples_in"] as? Int)
        kill(pid, SIGSTOP)
        Thread.sleep(forTimeInterval: 3)  // how long the reader is held up: the behaviour under test
        kill(pid, SIGCONT)
        try daemon.waitUntil(timeout: 30, "6 s of samples more") { ($0["samples_in"] as? Int ?? 0) > before + 600 }
        XCTAssertEqual(lost(try daemon.status()), 0, "held up for less than the buffer holds: \(fake.log)")
        let steps = try XCTUnwrap(try daemon.steps()["steps"] as? Int)

        // Held up for 15 s: about 5 s of scans find the buffer full.
        kill(pid, SIGSTOP)
        Thread.sleep(forTimeInterval: 15)  // how long the reader is held up: the behaviour under test
        kill(pid, SIGCONT)
        let status = try daemon.waitUntil(timeout: 30, "the lost samples in STATUS") { (lost($0) ?? 0) > 0 }
        let count = try XCTUnwrap(lost(status))
        XCTAssertGreaterThan(count, 200, "about 5 s at 100 Hz")
        XCTAssertLessThan(count, 800, "about 5 s at 100 Hz")
        let source = try XCTUnwrap(status["source"] as? [String: Any])
        let at = try XCTUnwrap(source["samples_lost_at"] as? String)
        let when = try XCTUnwrap(Timestamp.date(at), at)
        XCTAssertLessThan(abs(when.timeIntervalSinceNow), 60, "when the gap began: \(at)")
        try waitForLog("\(count) samples lost", in: { fake.log })
        // The count goes on from the scans after the gap.
        try pollUntil("steps after the gap", timeout: 30, every: 0.2, detail: fake.log) {
            (try daemon.steps()["steps"] as? Int ?? 0) > steps + 10
        }
        XCTAssertEqual(lost(try daemon.status()), count, "one gap, counted once")

        // Exactly the scans the device dropped with its buffer full (fake-iio says so when the buffer goes).
        XCTAssertEqual(fake.terminate(), 0)
        let dropped = fake.log.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: #"\(\d+ dropped"#, options: .regularExpression) else { return nil }
            return Int(line[range].dropFirst().split(separator: " ")[0])
        }.reduce(0, +)
        XCTAssertEqual(count, dropped, fake.log)
    }
}
