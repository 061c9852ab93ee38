import Foundation
import XCTest

/// What systemd does to the daemon, done by the test: it binds the socket and passes it as descriptor 3
/// (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES), listens for notify messages on a datagram socket
/// (NOTIFY_SOCKET), and asks for watchdog pings (WATCHDOG_USEC).
final class ServiceActivationTests: XCTestCase {
    private func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        return address
    }

    private func bound(_ type: Int32, at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, type, 0)
        var addr = address(path)
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, result == 0 else { throw NSError(domain: "bind", code: Int(errno)) }
        return fd
    }

    /// The notify datagrams, each split into its KEY=value lines; nil after `timeout` without one.
    private func receiveNotification(_ fd: Int32, timeout: TimeInterval) -> [String]? {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Starts stepd as systemd would: fd 3 is `listener`, and LISTEN_PID is the daemon's own pid, which
    /// only the process itself knows before exec, hence the shell's `$$`.
    private func spawnActivated(listener: Int32, environment: [String: String], arguments: [String],
                                log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, listener, 3)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ["/bin/sh", "-c", "export LISTEN_PID=$$; exec \"$0\" \"$@\"", Binaries.stepd] + arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTEN_") && $0.key != "NOTIFY_SOCKET" }
        env.merge(environment) { $1 }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, "/bin/sh", &actions, nil, cArgs, cEnv)
        guard result == 0 else { throw NSError(domain: "posix_spawn", code: Int(result)) }
        return pid
    }

    func testServesThePassedSocketAndSpeaksTheNotifyProtocol() throws {
        let directory = try TemporaryDirectory()
        let socketPath = directory.file("stepd.sock")
        let notifyPath = directory.file("notify")
        let listener = try bound(Int32(SOCK_STREAM.rawValue), at: socketPath)
        XCTAssertEqual(listen(listener, 16), 0)
        let notify = try bound(Int32(SOCK_DGRAM.rawValue), at: notifyPath)
        defer { close(listener); close(notify) }
        var before = stat()
        XCTAssertEqual(stat(socketPath, &before), 0)

        // A client that connects before the daemon runs waits in the backlog, as under systemd.
        let early = try SocketClient(path: socketPath, readVersion: false)

        let pid = try spawnActivated(listener: listener, environment: [
            "LISTEN_FDS": "1", "LISTEN_FDNAMES": "stepd.sock", "NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "1000000",
        ], arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop",
                       "--state-dir", directory.file("state"), "--socket", directory.file("unused.sock")],
           log: directory.file("stepd.log"))
        var exited = false
        defer { if !exited { kill(pid, SIGKILL); var s: Int32 = 0; waitpid(pid, &s, 0) } }

        var messages: [[String]] = []
        var ready: [String]?
        let deadline = Date().addingTimeInterval(30)
        // A start may take seconds on a busy machine: a second without a message is not the end.
        while ready == nil, Date() < deadline {
            guard let message = receiveNotification(notify, timeout: 1) else { continue }
            messages.append(message)
            if message.contains("READY=1") { ready = message }
        }
        let log = { (try? String(contentsOfFile: directory.file("stepd.log"), encoding: .utf8)) ?? "" }
        let readyMessage = try XCTUnwrap(ready, "no READY=1; got \(messages); log:\n\(log())")
        // READY comes once the passed socket accepts: the early client is served at once.
        let version = try early.readObject()
        XCTAssertEqual(version["class"] as? String, "VERSION")
        XCTAssertEqual(try early.request(["cmd": "steps"])["class"] as? String, "STEPS")
        let status = try XCTUnwrap(readyMessage.first { $0.hasPrefix("STATUS=") })
        XCTAssertTrue(status.contains("steps since"), status)
        XCTAssertTrue(readyMessage.contains("MAINPID=\(pid)"), "\(readyMessage)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("unused.sock")),
                       "with a passed socket the daemon must not bind its own")

        // WATCHDOG_USEC=1 s: a ping every 0.5 s, for as long as the daemon runs.
        var pings = 0
        let watchUntil = Date().addingTimeInterval(2.6)
        while Date() < watchUntil, let message = receiveNotification(notify, timeout: 1) {
            if message.contains("WATCHDOG=1") { pings += 1 }
        }
        print("watchdog pings in 2.6 s: \(pings)")
        XCTAssertGreaterThanOrEqual(pings, 4)
        XCTAssertLessThanOrEqual(pings, 7)

        kill(pid, SIGTERM)
        var stopping: [String]?
        while stopping == nil, let message = receiveNotification(notify, timeout: 5) {
            if message.contains("STOPPING=1") { stopping = message }
        }
        XCTAssertNotNil(stopping, "no STOPPING=1")
        var status32: Int32 = 0
        waitpid(pid, &status32, 0)
        exited = true
        XCTAssertEqual((status32 >> 8) & 0xFF, 0, "exit status")
        // The socket is systemd's: it outlives the daemon, the very same file.
        var after = stat()
        XCTAssertEqual(stat(socketPath, &after), 0, "the daemon removed systemd's socket")
        XCTAssertEqual(after.st_ino, before.st_ino)
        XCTAssertTrue(log().contains("serving the socket systemd passed (\(socketPath))"), log())
    }

    /// systemd's own implementation of the passing side: systemd-socket-activate binds, and starts stepd
    /// on the first connection, which stepd then serves.
    func testFirstConnectionStartsTheDaemonUnderSystemdSocketActivate() throws {
        let tool = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("systemd-socket-activate is not installed") }
        let directory = try TemporaryDirectory()
        let socketPath = directory.file("stepd.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--listen=\(socketPath)", "--fdname=stepd.sock", Binaries.stepd,
                             "--replay", Binaries.bundledRecording, "--speed", "4", "--loop",
                             "--state-dir", directory.file("state"), "--socket", directory.file("unused.sock")]
        let log = directory.file("activate.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        // systemd-socket-activate binds the path before it listens: a connect between the two is refused, so the
        // wait is for a connection that succeeds, not for the file.
        let readLog = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        let client = try pollFor("a connection to the socket systemd-socket-activate listens on", timeout: 20,
                                 detail: readLog()) {
            try? SocketClient(path: socketPath, receiveTimeout: 20)
        }
        XCTAssertEqual(client.version["class"] as? String, "VERSION")
        let status = try client.request(["cmd": "status"])
        XCTAssertEqual((status["source"] as? [String: Any])?["kind"] as? String, "replay")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("unused.sock")))
        // The daemon logs this once the socket is adopted, and may answer a client first: a wait for the line.
        try pollUntil("the log line for the passed socket", timeout: 20, detail: readLog()) {
            readLog().contains("serving the socket systemd passed (\(socketPath))")
        }
        let text = readLog()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
    }

    func testWithoutNotifySocketTheDaemonStillRuns() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording], environment: ["WATCHDOG_USEC": "1000000"])
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
        XCTAssertEqual(daemon.terminate(), 0)
    }
}
