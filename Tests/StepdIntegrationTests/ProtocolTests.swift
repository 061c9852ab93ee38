import Foundation
import Locking
import XCTest

/// The socket protocol, spoken to the real daemon through a real Unix socket.
final class ProtocolTests: XCTestCase {
    private var daemon: Daemon!

    override func setUpWithError() throws {
        daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"])
    }

    override func tearDown() {
        daemon?.terminate()
        daemon = nil
    }

    func testGreetsWithVersion() throws {
        let client = try daemon.connect()
        XCTAssertEqual(client.version["class"] as? String, "VERSION")
        XCTAssertEqual(client.version["proto_major"] as? Int, 1)
        XCTAssertNotNil(client.version["proto_minor"] as? Int)
        XCTAssertNotNil(client.version["release"] as? String)
    }

    func testStatusDescribesTheSourceAndRates() throws {
        try daemon.waitUntil(timeout: 10, "the rate to be measured") { ($0["rate_in_hz"] as? Double ?? 0) > 0 }
        let status = try daemon.connect().request(["cmd": "status", "id": "s1"])
        XCTAssertEqual(status["class"] as? String, "STATUS")
        XCTAssertEqual(status["id"] as? String, "s1")
        let source = try XCTUnwrap(status["source"] as? [String: Any])
        XCTAssertEqual(source["kind"] as? String, "replay")
        XCTAssertEqual(source["state"] as? String, "running")
        // The bundled recording is at 100 Hz; the rate is measured on the source's clock, so the replay speed
        // does not change it.
        XCTAssertEqual(try XCTUnwrap(status["rate_in_hz"] as? Double), 100, accuracy: 2)
        XCTAssertEqual(status["rate_out_hz"] as? Double, 60)
        XCTAssertEqual(status["detector"] as? String, "peak")
        XCTAssertGreaterThan(try XCTUnwrap(status["uptime_s"] as? Double), 0)
    }

    func testStepsGrowAndCarryTheirFields() throws {
        let client = try daemon.connect()
        let first = try client.request(["cmd": "steps", "id": 1])
        XCTAssertEqual(first["class"] as? String, "STEPS")
        XCTAssertEqual(first["id"] as? Int, 1)
        for key in ["since", "cadence_spm", "distance_m", "detector"] { XCTAssertNotNil(first[key], key) }
        let firstSteps = try XCTUnwrap(first["steps"] as? Int)
        try daemon.waitForSteps("more steps than \(firstSteps), at a walking cadence") {
            ($0["steps"] as? Int ?? 0) > firstSteps && ($0["cadence_spm"] as? Double ?? 0) > 60
        }
    }

    func testResetStartsAgainFromZero() throws {
        try daemon.waitForSteps("a first step, so that the reset has something to clear") { ($0["steps"] as? Int ?? 0) > 0 }
        let client = try daemon.connect()
        let reply = try client.request(["cmd": "reset", "id": "r"])
        XCTAssertEqual(reply["class"] as? String, "STEPS")
        XCTAssertEqual(reply["steps"] as? Int, 0)
        XCTAssertEqual(reply["id"] as? String, "r")
        let since = try XCTUnwrap(reply["since"] as? String)
        XCTAssertEqual(try client.request(["cmd": "steps"])["since"] as? String, since)
    }

    func testWatchPushesEveryStepInOrderUntilDisabled() throws {
        let client = try daemon.connect()
        let ack = try client.request(["cmd": "watch", "enable": true, "classes": ["STEP"]])
        XCTAssertEqual(ack["class"] as? String, "WATCH")
        XCTAssertEqual(ack["classes"] as? [String], ["STEP"])
        var counts: [Int] = []
        while counts.count < 10 {
            let event = try client.readObject()
            XCTAssertEqual(event["class"] as? String, "STEP")
            XCTAssertNotNil(event["time"] as? String)
            counts.append(try XCTUnwrap(event["steps"] as? Int))
        }
        XCTAssertEqual(counts, Array(counts[0]..<(counts[0] + 10)), "one event per step, none skipped")
        let off = try client.request(["cmd": "watch", "enable": false])
        XCTAssertEqual(off["enable"] as? Bool, false)
        // Drain what was in flight (steps counted before the daemon read "off"), then nothing more arrives while
        // the daemon counts on: its count, read on another connection, is the clock.
        func stepsCounted() throws -> Int { try XCTUnwrap(daemon.connect().request(["cmd": "steps"])["steps"] as? Int) }
        let atOff = try stepsCounted()
        try daemon.waitForSteps("two steps after watch was disabled") { ($0["steps"] as? Int ?? 0) >= atOff + 2 }
        try client.sendLine(#"{"cmd":"status","id":"mark"}"#)
        while (try client.readObject())["id"] as? String != "mark" {}
        let atMark = try stepsCounted()
        try daemon.waitForSteps("three more steps") { ($0["steps"] as? Int ?? 0) >= atMark + 3 }
        try client.sendLine(#"{"cmd":"status","id":"end"}"#)
        XCTAssertEqual(try client.readObject()["id"] as? String, "end", "no STEP after watch was disabled")
    }

    func testMalformedRequestsGetAnErrorAndTheConnectionStays() throws {
        let client = try daemon.connect()
        let cases: [(String, String)] = [
            ("not json", "not valid JSON"),
            ("[1,2,3]", "JSON object"),
            (#"{"id":4}"#, "no \"cmd\""),
            (#"{"cmd":"fly"}"#, "unknown command"),
            (#"{"cmd":42}"#, "no \"cmd\""),
            (#"{"cmd":"watch","enable":"yes"}"#, "\"enable\""),
            (#"{"cmd":"watch","classes":["NOPE"]}"#, "\"classes\""),
            ("{\"cmd\":\"steps\"", "not valid JSON"),
            (String(repeating: "[", count: 3000), "nests"),
            (#"{"cmd":"steps","id":"# + String(repeating: "{\"a\":", count: 100) + "1" + String(repeating: "}", count: 101), "nests"),
        ]
        for (line, expected) in cases {
            try client.sendLine(line)
            let reply = try client.readObject()
            XCTAssertEqual(reply["class"] as? String, "ERROR", line)
            XCTAssert((reply["message"] as? String ?? "").contains(expected), "\(line) → \(reply)")
        }
        XCTAssertEqual(try client.request(["cmd": "steps"])["class"] as? String, "STEPS")
    }

    /// Every kind of refusal carries its code (docs/protocol.md "Errors"), which is what a client decides on.
    func testEveryErrorCarriesItsCode() throws {
        let client = try daemon.connect()
        let cases: [(line: String, code: String)] = [
            ("not json", "bad_request"),
            ("[1,2,3]", "bad_request"),
            (#"{"id":4}"#, "bad_request"),
            (String(repeating: "[", count: 3000), "bad_request"),
            (#"{"cmd":"watch","enable":"yes"}"#, "bad_request"),
            (#"{"cmd":"track","from":"yesterday"}"#, "bad_request"),
            (#"{"cmd":"history","from":"2026-11-23T10:00:00Z","to":"2026-11-23T09:00:00Z"}"#, "bad_request"),
            (#"{"cmd":"fly","id":3}"#, "unknown_command"),
            (#"{"cmd":"status","id":5,"pad":""# + String(repeating: "x", count: 5000) + #""}"#, "too_long"),
            (#"{"cmd":"history","bin":"minute","from":"2026-01-01T00:00:00Z","to":"2026-03-01T00:00:00Z"}"#, "range_too_long"),
            (#"{"cmd":"history","bin":"day","from":"1990-01-01T00:00:00Z","to":"2026-03-01T00:00:00Z"}"#, "range_too_long"),
        ]
        for (line, code) in cases {
            try client.sendLine(line)
            let reply = try client.readObject()
            XCTAssertEqual(reply["class"] as? String, "ERROR", line)
            XCTAssertEqual(reply["code"] as? String, code, "\(line.prefix(120)) → \(reply)")
            XCTAssertNotNil(reply["message"] as? String)
        }
        XCTAssertEqual(try client.request(["cmd": "steps"])["class"] as? String, "STEPS", "the connection stays")

        // A reset by an ordinary user.
        try Unprivileged.requireTools()
        Unprivileged.openSocket(daemon)
        let reset = try runCommand("/usr/bin/setpriv", Unprivileged.asUser(Unprivileged.nobody, ["/usr/bin/python3", "-c", """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
            f.readline(); f.write('{"cmd":"reset","id":1}\\n'); f.flush(); print(f.readline(), end="")
            """, daemon.socketPath]))
        XCTAssertEqual(reset.status, 0, reset.stderr)
        let refusal = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(reset.stdout.utf8)) as? [String: Any], reset.stdout)
        XCTAssertEqual(refusal["code"] as? String, "not_permitted", "\(refusal)")
        XCTAssertEqual(refusal["id"] as? Int, 1)
    }

    /// A connection over the limit is refused with `too_many_clients` in place of VERSION.
    func testAConnectionOverTheLimitGetsTooManyClients() throws {
        let full = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--max-clients", "2"])
        let held = try (0..<2).map { _ in try full.connect() }
        let refusal = try SocketClient(path: full.socketPath, readVersion: false).readObject()
        XCTAssertEqual(refusal["class"] as? String, "ERROR")
        XCTAssertEqual(refusal["code"] as? String, "too_many_clients", "\(refusal)")
        withExtendedLifetime(held) {}
    }

    func testEveryErrorCarriesItsIDAndLargeIntegerIDsComeBackExactly() throws {
        let client = try daemon.connect()
        try client.sendLine(#"{"cmd":"fly","id":"f1"}"#)
        XCTAssertEqual(try client.readObject()["id"] as? String, "f1", "an unknown command's ERROR keeps the id")
        try client.sendLine(#"{"id":7}"#)
        XCTAssertEqual(try client.readObject()["id"] as? Int, 7, "a request without cmd too")
        // Above 2^53 a double skips integers: 9007199254740993 would come back as ...992.
        for id in ["9007199254740993", "-9223372036854775808", "18446744073709551615", "1.5", "\"x\""] {
            try client.sendLine(#"{"cmd":"steps","id":"# + id + "}")
            var line = try client.readLine()
            while !line.contains("\"STEPS\"") { line = try client.readLine() }
            XCTAssert(line.contains("\"id\":\(id)"), "id \(id) came back as: \(line)")
        }
    }

    /// docs/protocol.md's Python client, run as printed against the daemon, returns for every request.
    func testTheDocumentedPythonClientAnswersEveryRequest() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { throw XCTSkip("no python3") }
        let doc = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let start = try XCTUnwrap(doc.range(of: "```python\n"))
        let end = try XCTUnwrap(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
        let program = String(doc[start.upperBound..<end.lowerBound]) + """
            for cmd in ["status", "position", "track", "visits", "history", "steps"]:
                print(stepd({"cmd": cmd})["class"])
            """
        let result = try runCommand("/usr/bin/python3", ["-c", program], environment: ["STEPD_SOCKET": daemon.socketPath], timeout: 30)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.split(separator: "\n").dropFirst().map(String.init),
                       ["STATUS", "POSITION", "TRACK", "VISITS", "HISTORY", "STEPS"], result.stdout + result.stderr)
    }

    func testOverlongLineIsDiscardedAndTheConnectionKept() throws {
        let client = try daemon.connect()
        try client.sendRaw(Data(repeating: UInt8(ascii: "x"), count: 100_000) + Data("\n".utf8))
        let reply = try client.readObject()
        XCTAssertEqual(reply["class"] as? String, "ERROR")
        XCTAssert((reply["message"] as? String ?? "").contains("longer than 4096"), "\(reply)")
        XCTAssertEqual(try client.request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    func testManyClientsAtOnceAndVanishingClientsHarmNobody() throws {
        // Clients that connect, ask, and close without reading their reply.
        for _ in 0..<50 {
            let rude = try SocketClient(path: daemon.socketPath, readVersion: false)
            try rude.sendLine(#"{"cmd":"watch","enable":true}"#)
            try rude.sendLine(#"{"cmd":"status"}"#)
            rude.close()
        }
        let group = DispatchGroup()
        final class Failures: Sendable {
            private let list = Locked<[String]>([])
            func add(_ s: String) { list.withLock { $0.append(s) } }
            var all: [String] { list.withLock { $0 } }
        }
        let failures = Failures()
        let socketPath = daemon.socketPath
        for i in 0..<64 {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                do {
                    let client = try SocketClient(path: socketPath)
                    for j in 0..<10 {
                        let reply = try client.request(["cmd": j % 2 == 0 ? "steps" : "status", "id": i * 100 + j])
                        if reply["id"] as? Int != i * 100 + j { throw NSError(domain: "id", code: i) }
                    }
                } catch {
                    failures.add("\(i): \(error)")
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.all, [])
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    func testStepctlReadsTheDaemon() throws {
        try daemon.waitForSteps("a first step") { ($0["steps"] as? Int ?? 0) > 0 }
        let steps = try runCommand(Binaries.stepctl, ["steps", "--socket", daemon.socketPath])
        XCTAssertEqual(steps.status, 0, steps.stderr)
        XCTAssert(steps.stdout.contains("steps since"), steps.stdout)
        let json = try runCommand(Binaries.stepctl, ["steps", "--json", "--socket", daemon.socketPath])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["class"] as? String, "STEPS")
        let status = try runCommand(Binaries.stepctl, ["status", "--socket", daemon.socketPath])
        XCTAssert(status.stdout.contains("replay"), status.stdout)
        let reset = try runCommand(Binaries.stepctl, ["reset", "--json", "--socket", daemon.socketPath])
        XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(reset.stdout.utf8)) as? [String: Any])?["steps"] as? Int, 0)
    }

    func testStepctlWithoutDaemonSaysSo() throws {
        let dir = try TemporaryDirectory()
        let result = try runCommand(Binaries.stepctl, ["steps", "--socket", dir.file("none.sock")])
        XCTAssertEqual(result.status, 69)
        XCTAssert(result.stderr.contains("cannot connect to stepd"), result.stderr)
    }
}

/// How the daemon starts and stops.
final class DaemonLifecycleTests: XCTestCase {
    func testSIGINTAndSIGTERMExitCleanlyAndRemoveTheSocket() throws {
        for signal in [SIGTERM, SIGINT] {
            let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording])
            XCTAssertEqual(daemon.terminate(signal: signal), 0)
            XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socketPath))
        }
    }

    func testASecondDaemonOnTheSameSocketIsRefused() throws {
        let dir = try TemporaryDirectory()
        let first = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: dir)
        // Its own state directory: one shared with the first is refused before the socket (StoreFaultTests).
        let second = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--state-dir", dir.file("state2")],
                                directory: dir, waitForSocket: false)
        second.process.waitUntilExit()
        XCTAssertNotEqual(second.process.terminationStatus, 0)
        XCTAssert(second.log.contains("already listening"), second.log)
        XCTAssertEqual(try first.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    /// A socket file left by a daemon that died (nobody listens on it) is replaced.
    func testAStaleSocketIsReplaced() throws {
        let dir = try TemporaryDirectory()
        let stale = try Self.leaveStaleSocket(at: dir.file("stepd.sock"))
        XCTAssertThrowsError(try ServerBoundsTests.connectNeverReading(stale), "nobody listens on it")
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: dir)
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    /// Anything at the socket's path that is not a stale socket is someone's: the daemon refuses to start, says
    /// why, and leaves it as it was (a regular file there is not removed as a stale socket is).
    func testARegularFileOrDirectoryAtTheSocketPathIsRefusedAndLeftUntouched() throws {
        let dir = try TemporaryDirectory()
        let precious = Data("the administrator's notes\n".utf8)
        XCTAssert(FileManager.default.createFile(atPath: dir.file("stepd.sock"), contents: precious))
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: dir, waitForSocket: false)
        try pollUntil("stepd to refuse the path and exit", timeout: 20, detail: daemon.log) { !daemon.process.isRunning }
        XCTAssertEqual(daemon.process.terminationStatus, 73, daemon.log)
        XCTAssert(daemon.log.contains("stepd.sock exists and is a regular file, not a socket left by a stopped daemon"), daemon.log)
        XCTAssertEqual(FileManager.default.contents(atPath: dir.file("stepd.sock")), precious)

        try FileManager.default.createDirectory(atPath: dir.file("dir.sock"), withIntermediateDirectories: false)
        let second = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: dir, socketName: "dir.sock",
                                waitForSocket: false)
        try pollUntil("stepd to refuse the directory and exit", timeout: 20, detail: second.log) { !second.process.isRunning }
        XCTAssertEqual(second.process.terminationStatus, 73, second.log)
        XCTAssert(second.log.contains("is a directory"), second.log)
    }

    /// SIGHUP, SIGUSR1 and SIGUSR2 would kill the daemon (their default action) without its final save: HUP and
    /// USR2 are logged and ignored, USR1 logs the daemon's state; SIGTERM still saves the count.
    func testHUPUSR1AndUSR2NeitherKillTheDaemonNorCostItsSave() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"])
        _ = try daemon.waitForSteps("steps") { ($0["steps"] as? Int ?? 0) > 0 }
        for signal in [SIGHUP, SIGUSR1, SIGUSR2, SIGHUP] {
            kill(daemon.process.processIdentifier, signal)
            usleep(100_000)  // the pace of the load or probe under test, not a wait for an event
        }
        XCTAssertTrue(daemon.process.isRunning, daemon.log)
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
        try pollUntil("the signals to be logged", timeout: 10, every: 0.1, detail: daemon.log) {
            daemon.log.contains("SIGUSR2 ignored")
        }
        try waitForLog("SIGHUP ignored: stepd reads its configuration only at start", in: { daemon.log })
        try waitForLog("SIGUSR1: ", in: { daemon.log })
        try waitForLog(" steps since ", in: { daemon.log })
        XCTAssertEqual(daemon.terminate(), 0)
        XCTAssert(daemon.log.contains(" saved to "), daemon.log)
    }

    /// A crash leaves a trace: on a fatal signal, Swift's runtime backtracer writes a symbolicated backtrace
    /// of the daemon's threads to its log (stderr: the journal under systemd), also for the statically linked
    /// release build, which finds no backtracer by itself (CrashTrace). A SIGSEGV sent with tgkill(2) to the
    /// main thread, once it waits in the kernel, stands for the crash: the runtime's handler backtraces it the
    /// same way (and, no instruction having faulted, the process then runs on). It is sent to that thread, not
    /// to the process: the kernel hands a process-directed signal to any thread that does not block it, and
    /// under load that was often one just being started, whose only frame is `start_thread`.
    func testAFatalSignalLeavesASymbolicatedBacktraceInTheLog() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop"])
        let pid = daemon.process.processIdentifier
        try pollUntil("the main thread to wait in the kernel", timeout: 30, every: 0.05) {
            Self.threadState(pid: pid, thread: pid) == "S"
        }
        XCTAssertEqual(Self.tgkill(pid, pid, SIGSEGV), 0)
        try pollUntil("the backtrace", timeout: 60, every: 0.2, detail: daemon.log) { daemon.log.contains("Backtrace took") }
        let log = daemon.log
        XCTAssert(log.contains("*** Program crashed: "), log)
        XCTAssert(log.contains("Thread 0 \"stepd\" crashed:"), log)
        // Frames are named: function + offset in an image (a C library call, where the main thread waits).
        XCTAssert(log.range(of: #"\n *0 +0x[0-9a-f]+ [A-Za-z_][^\n]* \+ \d+ in \S+"#, options: .regularExpression) != nil, log)
        daemon.terminate(signal: SIGKILL)
    }

    /// glibc's tgkill(2), which Swift's Glibc module does not declare (it is a GNU extension).
    private static let tgkill: @convention(c) (pid_t, pid_t, Int32) -> Int32 = {
        unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "tgkill")!,
                      to: (@convention(c) (pid_t, pid_t, Int32) -> Int32).self)
    }()

    /// The state letter of a thread (`R` running, `S` waiting in the kernel, ...) from /proc.
    private static func threadState(pid: pid_t, thread: pid_t) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
              let end = stat.range(of: ") ", options: .backwards) else { return nil }
        return stat[end.upperBound...].first.map(String.init)
    }

    /// A socket bound at `path` and closed without being removed, as a daemon killed by SIGKILL leaves it.
    private static func leaveStaleSocket(at path: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        Glibc.close(fd)
        return path
    }

    func testEmbeddedDefaultRunsAsAnOrdinaryUserWithAPerUserSocket() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv to become an ordinary user")
        }
        // nobody cannot write /run, so the daemon must pick /tmp/stepd-65534/.
        let expected = "/tmp/stepd-65534/stepd.sock"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.stepd, "--demo", "--speed", "20"]
        process.environment = ["PATH": "/usr/bin:/bin", "STEPD_DATA_DIR": Binaries.repository.appendingPathComponent("data").path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { kill(process.processIdentifier, SIGTERM); process.waitUntilExit() }
        let connected = try pollFor("a socket at \(expected)", timeout: 10) { try? SocketClient(path: expected) }
        try pollUntil("a first step", timeout: 20) { (try connected.request(["cmd": "steps"])["steps"] as? Int ?? 0) > 0 }
        let status = try connected.request(["cmd": "status"])
        XCTAssert(((status["source"] as? [String: Any])?["description"] as? String ?? "").contains("walk-inhand"))
    }
}
