import Foundation
import XCTest

/// The pedometer and motion classes, access control and limits, against the running daemon.
final class PedometerProtocolTests: XCTestCase {
    func testStepsCarriesThePedometerFields() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "8", "--height", "1.80"])
        try daemon.waitUntil(timeout: 30, "some walking") { _ in
            (try daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0) > 30
        }
        let s = try daemon.connect().request(["cmd": "steps"])
        let steps = try XCTUnwrap(s["steps"] as? Int)
        let stride = try XCTUnwrap(s["stride_m"] as? Double)
        XCTAssertEqual(stride, 0.745, accuracy: 0.001, "0.414 × height until GPS calibrates it")
        XCTAssertEqual(s["stride_calibrated"] as? Bool, false)
        XCTAssertEqual(try XCTUnwrap(s["distance_m"] as? Double), Double(steps) * stride, accuracy: 0.05)
        XCTAssertEqual(s["activity"] as? String, "walking")
        let cadence = try XCTUnwrap(s["current_cadence_spm"] as? Double)
        XCTAssert((80...140).contains(cadence), "walking cadence, got \(cadence)")
        let pace = try XCTUnwrap(s["current_pace_s_per_m"] as? Double)
        XCTAssertEqual(pace, 60 / (cadence * stride), accuracy: 0.01)
        let average = try XCTUnwrap(s["average_active_pace_s_per_m"] as? Double)
        XCTAssert((0.4...1.5).contains(average), "average active pace \(average) s/m")
        XCTAssertNotNil(s["start"] as? String)
        XCTAssertNotNil(s["end"] as? String)
        XCTAssertNil(s["floors_ascended"], "no barometer, no floors")
    }

    func testPedometerAndActivityEventsFollowTheWalk() throws {
        // The recording ends and the daemon sees the walker stop: ACTIVITY stationary and a last PEDOMETER.
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "10"])
        let client = try daemon.connect()
        _ = try client.request(["cmd": "watch", "enable": true, "classes": ["PEDOMETER", "ACTIVITY"]])
        var pedometers: [[String: Any]] = []
        var activities: [String] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let event = try client.readObject()
            switch event["class"] as? String {
            case "PEDOMETER": pedometers.append(event)
            case "ACTIVITY": activities.append(try XCTUnwrap(event["state"] as? String))
            default: XCTFail("unexpected \(event)")
            }
            if activities.last == "stationary" { break }
        }
        XCTAssertEqual(activities.last, "stationary")
        XCTAssertGreaterThan(pedometers.count, 3)
        let counts = pedometers.compactMap { $0["steps"] as? Int }
        XCTAssertEqual(counts, counts.sorted(), "counts never go back")
        let final = try client.request(["cmd": "steps"])
        XCTAssertEqual(counts.last, final["steps"] as? Int)
        XCTAssertEqual(final["activity"] as? String, "stationary")
    }

    func testMotionStreamsAtTheRequestedRate() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop"])
        for rate in [20.0, 60.0] {
            let client = try daemon.connect()
            let ack = try client.request(["cmd": "watch", "enable": true, "classes": ["MOTION"], "rate_hz": rate])
            XCTAssertEqual(ack["rate_hz"] as? Double, rate)
            _ = try client.readObject()  // let the stream start
            let start = Date()
            var count = 0
            var last: [String: Any] = [:]
            while Date().timeIntervalSince(start) < 2 {
                last = try client.readObject()
                XCTAssertEqual(last["class"] as? String, "MOTION")
                count += 1
            }
            let measured = Double(count) / Date().timeIntervalSince(start)
            XCTAssertEqual(measured, rate, accuracy: rate * 0.2, "MOTION rate for \(rate) Hz")
            for key in ["pitch_deg", "roll_deg", "vertical_accel", "vibration_rms", "time"] { XCTAssertNotNil(last[key], key) }
            // A phone in the hand while walking: tilted, shaking, accelerating up and down around zero.
            XCTAssertLessThan(abs(try XCTUnwrap(last["vertical_accel"] as? Double)), 15)
        }
        let over = try daemon.connect().request(["cmd": "watch", "classes": ["MOTION"], "rate_hz": 500])
        XCTAssertEqual(over["rate_hz"] as? Double, 60, "capped at the pipeline rate")
        let bad = try daemon.connect().request(["cmd": "watch", "classes": ["MOTION"], "rate_hz": -1])
        XCTAssertEqual(bad["class"] as? String, "ERROR")
    }

    func testStatusReportsGravityInTheDevicesAxes() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4"])
        // The estimate starts from the first samples and settles within seconds on the recording's 1 g.
        try daemon.waitUntil(timeout: 20, "a gravity estimate of 9.8 ± 1 m/s²") { status in
            guard let gravity = status["gravity"] as? [Double], gravity.count == 3 else { return false }
            return abs((gravity.map { $0 * $0 }.reduce(0, +)).squareRoot() - 9.8) <= 1.0
        }
    }

    func testResetIsRefusedToAnOrdinaryUserAndAllowedToRoot() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv")
        }
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"])
        Unprivileged.openSocket(daemon)
        // The default detector counts a walk's first steps once six confirm the bout (5 s into this recording).
        try daemon.waitUntil(timeout: 20, "the first steps") { _ in
            (try daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0) > 0
        }
        let asNobody = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                          Binaries.stepctl, "reset", "--socket", daemon.socketPath])
        XCTAssertNotEqual(asNobody.status, 0)
        XCTAssert(asNobody.stderr.contains("not permitted"), asNobody.stderr)
        let read = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                      Binaries.stepctl, "steps", "--json", "--socket", daemon.socketPath])
        XCTAssertEqual(read.status, 0, "reading stays open to whoever can connect: \(read.stderr)")
        let counted = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [String: Any])?["steps"] as? Int)
        XCTAssertGreaterThan(counted, 0, "the refused reset changed nothing")
        let asRoot = try runCommand(Binaries.stepctl, ["reset", "--json", "--socket", daemon.socketPath])
        XCTAssertEqual(asRoot.status, 0, asRoot.stderr)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(asRoot.stdout.utf8)) as? [String: Any])?["steps"] as? Int, 0)
    }

    /// The socket is there with its mode from the first moment: never the umask's 0755 (which refuses the group's
    /// members), and never a mode that the daemon changes later, undoing one set by hand (the CI failure of stop 34).
    func testTheSocketAppearsWithItsModeAndNoStagingNameIsLeft() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("stepd.sock")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: directory, waitForSocket: false)
        var modes = Set<mode_t>(), seenAt: Date?
        let deadline = Date(timeIntervalSinceNow: 20)
        var info = stat()
        while Date() < deadline, seenAt.map({ Date().timeIntervalSince($0) < 0.5 }) ?? true {
            guard lstat(path, &info) == 0 else { continue }
            if seenAt == nil { seenAt = Date() }
            modes.insert(info.st_mode & 0o7777)
        }
        XCTAssertNotNil(seenAt, "the socket appeared: \(daemon.log)")
        XCTAssertEqual(modes, [0o660], "every mode the socket was seen with")
        try daemon.waitForSocket()
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("stepd.sock.") }
        XCTAssertEqual(left, [], "the name the socket was bound under is gone")
    }

    func testAdminGroupMembersMayReset() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv")
        }
        // Group 'users' (gid 100) exists on Debian; nobody joins it for this run only.
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--admin-group", "users"])
        Unprivileged.openSocket(daemon)
        let member = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--groups=100",
                                                        Binaries.stepctl, "reset", "--socket", daemon.socketPath])
        XCTAssertEqual(member.status, 0, member.stderr)
    }

    func testClientsBeyondTheLimitGetAnErrorAndAreClosed() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--max-clients", "3"])
        let held = try (0..<3).map { _ in try daemon.connect() }
        let extra = try SocketClient(path: daemon.socketPath, readVersion: false)
        let refusal = try extra.readObject()
        XCTAssertEqual(refusal["class"] as? String, "ERROR")
        XCTAssert((refusal["message"] as? String ?? "").contains("too many clients"))
        XCTAssertThrowsError(try extra.readLine(), "closed after the error")
        XCTAssertEqual(try held[0].request(["cmd": "status"])["clients"] as? Int, 3)
        held[2].close()
        try pollUntil("the daemon to see the third client gone", timeout: 10) {
            try held[0].request(["cmd": "status"])["clients"] as? Int == 2
        }
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    func testAWatcherThatNeverReadsIsDroppedAndOthersCarryOn() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--max-unsent-kib", "16"])
        let sleeper = try SocketClient(path: daemon.socketPath)
        // Ask for MOTION at 60 Hz and a large, unread backlog: kernel buffers fill, then the daemon's bound.
        try sleeper.sendLine(#"{"cmd":"watch","enable":true,"classes":["MOTION","STEP","PEDOMETER"],"rate_hz":60}"#)
        let reader = try daemon.connect()
        _ = try reader.request(["cmd": "watch", "enable": true, "classes": ["STEP"]])
        try daemon.waitUntil(timeout: 120, "the unread watcher to be dropped") { ($0["dropped_watchers"] as? Int ?? 0) >= 1 }
        try waitForLog("dropped a watcher", in: { daemon.log })
        // The well-behaved watcher still gets its steps.
        let event = try reader.readObject()
        XCTAssertEqual(event["class"] as? String, "STEP")
    }
}
