import Foundation
import Locking
import StepProtocol
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The helpers of WebLimitsTests, WebSilentPeerTests and WebWriteStallTests.
fileprivate extension XCTestCase {
    /// A daemon with no sensor and no GPS (nothing to do but answer) and stepd-web in front of it.
    func serve(_ directory: TemporaryDirectory, daemonArguments: [String] = ["--device", "stepd-test-absent", "--no-gps"])
        throws -> (Daemon, WebServer) {
        let daemon = try Daemon(arguments: daemonArguments, directory: directory)
        let web = try WebServer(socket: daemon.socketPath, directory: directory, extra: ["--tiles", "none"])
        return (daemon, web)
    }

    /// A GET with its own timeout, timed: the status (-1 when it timed out or failed) and the seconds it took.
    func timedGet(_ web: WebServer, _ path: String, timeout: TimeInterval = 10) -> (status: Int, body: String, seconds: Double) {
        let url = URL(string: "http://127.0.0.1:\(web.port)\(path)")!
        var request = URLRequest(url: url)
        request.timeoutInterval = timeout
        let started = Date()
        let reply = Locked((status: -1, body: ""))
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, _ in
            let status = (response as? HTTPURLResponse)?.statusCode ?? -1
            let body = data.map { String(decoding: $0, as: UTF8.self) } ?? ""
            reply.withLock { $0 = (status, body) }
            done.signal()
        }.resume()
        _ = done.wait(timeout: .now() + timeout + 5)
        let (status, body) = reply.value
        return (status, body, Date().timeIntervalSince(started))
    }
}

/// stepd-web holds nothing forever (docs/web.md, "Limits"): partial requests are closed, a request the daemon
/// refuses or does not answer gets an HTTP error at once and its connection to the daemon is closed, query values
/// are checked before they reach the daemon, and SIGTERM ends the process within 2 s whatever its clients hold.
final class WebLimitsTests: XCTestCase {
    /// The daemon's open connections, as `observer` (one of them) sees them.
    private func clients(_ observer: SocketClient) throws -> Int {
        try observer.request(["cmd": "status"])["clients"] as? Int ?? -1
    }

    /// 1,000 connections that each send a partial request head and then a header line every 2 s (slowloris) are
    /// all closed within 60 s (WebLimits.requestSeconds: 10 s each), while a GET of /api/status on a fresh
    /// connection once a second answers in under 2 s throughout. scripts/bench-web does the clients and prints
    /// the figures (docs/web.md). ~15 s.
    func testThousandSlowlorisConnectionsClosedWithinAMinuteWhileAGetAnswersInUnderTwoSeconds() throws {
        let directory = try TemporaryDirectory()
        let (daemon, web) = try serve(directory)
        defer { web.stop(); daemon.terminate() }
        let run = try runCommand(Binaries.repository.appendingPathComponent("scripts/bench-web").path,
                                 ["slowloris", "--port", String(web.port), "--connections", "1000", "--seconds", "60",
                                  "--pid", String(web.process.processIdentifier)], timeout: 120)
        XCTAssertEqual(run.status, 0, run.stderr)
        print("WebLimitsTests slowloris: \(run.stdout)")
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(result["opened"] as? Int, 1000, run.stdout)
        XCTAssertEqual(result["still_open"] as? Int, 0, "partial requests kept open for 60 s: \(run.stdout)")
        XCTAssertEqual(result["closed_by_server"] as? Int, 1000, run.stdout)
        XCTAssertLessThan(result["all_closed_after_s"] as? Double ?? 999, 60, run.stdout)
        XCTAssertGreaterThanOrEqual(result["probes"] as? Int ?? 0, 5, run.stdout)
        XCTAssertEqual(result["probe_failures"] as? Int, 0, run.stdout)
        // Answered meanwhile, not queued behind the 1,000 (their closes take 10 s); how fast is scripts/bench-web's.
        XCTAssertLessThan((result["probe_s"] as? [String: Any])?["max"] as? Double ?? 999, 5, run.stdout)
        XCTAssertTrue(web.process.isRunning, web.log)
    }

    /// A `from` of 4,100 characters (a request line the daemon would discard with an ERROR that has no id) is
    /// answered 400 at once with what is wrong, and so are other malformed values, and no connection to the
    /// daemon is left behind: its `clients` count comes back to the test's own connection alone. A range the
    /// daemon refuses (`from` after `to`) still gets its words with 400.
    func testALongFromGetsAnHTTPErrorAtOnceAndNoDaemonConnectionIsLeft() throws {
        let directory = try TemporaryDirectory()
        let (daemon, web) = try serve(directory)
        defer { web.stop(); daemon.terminate() }
        XCTAssertEqual(timedGet(web, "/api/status").status, 200)
        // With no page open stepd-web holds no connection to the daemon, and the one of that GET closes once
        // its answer is sent, a moment after the browser has it: the observer is then the daemon's only client.
        let observer = try daemon.connect()
        try pollUntil("stepd-web's connection of /api/status closed", timeout: 10, every: 0.1,
                      detail: "\((try? clients(observer)) ?? -1)") {
            try clients(observer) == 1
        }
        let long = "2026-11-16T00:00:00" + String(repeating: "0", count: 4100)
        for path in ["/api/history?bin=day&from=\(long)", "/api/track?to=\(long)", "/api/visits?from=\(long)",
                     "/api/history?from=yesterday", "/api/history?bin=\(String(repeating: "d", count: 5000))",
                     "/api/history?bin=week", "/api/history?from=2026-11-16T00:00:00.\(String(repeating: "1", count: 30))Z"] {
            for _ in 0..<(path.count > 4000 ? 3 : 1) {
                let reply = timedGet(web, path)
                XCTAssertEqual(reply.status, 400, "\(path.prefix(60)): \(reply.body.prefix(300))")
                XCTAssertLessThan(reply.seconds, 5, "\(path.prefix(60)): answered, not left to the 10 s daemon time-out")
                XCTAssertTrue(reply.body.hasPrefix("{\"error\":\"\\\""), reply.body)
                XCTAssertLessThan(reply.body.utf8.count, 300, "the error repeats the whole value")
            }
        }
        let refused = timedGet(web, "/api/history?from=2026-11-23T10:00:00Z&to=2026-11-23T09:00:00Z")
        XCTAssertEqual(refused.status, 400, refused.body)
        XCTAssertTrue(refused.body.contains("must be before"), refused.body)
        // Milliseconds and a zone's offset (its "+" escaped) are read; the range, the last six hours, is one that
        // minute bins may cover on any day (a literal date here became too long a range a week after it was written).
        let sixHoursAgo = Timestamp.string(Date(timeIntervalSinceNow: -6 * 3600), in: TimeZone(secondsFromGMT: 3600)!)
        let offsetFrom = timedGet(web, "/api/history?bin=minute&from=\(sixHoursAgo.replacingOccurrences(of: "+", with: "%2B"))")
        XCTAssertEqual(offsetFrom.status, 200, "\(sixHoursAgo): \(offsetFrom.body.prefix(300))")
        try pollUntil("the daemon's clients back to the observer alone", timeout: 10, every: 0.1,
                      detail: "\((try? clients(observer)) ?? -1)") {
            try clients(observer) == 1
        }
    }

    /// SIGTERM while clients hold event streams (read, and never read), pipeline a file without reading, send a
    /// POST whose body never comes and partial heads (scripts/bench-web hold): stepd-web exits within 2 s.
    func testSigtermExitsWithinTwoSecondsWhateverTheClientsHold() throws {
        let directory = try TemporaryDirectory()
        // A walking replay: the event streams carry MOTION at 20 Hz and steps.
        let (daemon, web) = try serve(directory, daemonArguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"])
        defer { daemon.terminate() }
        let holder = Process()
        holder.executableURL = Binaries.repository.appendingPathComponent("scripts/bench-web")
        holder.arguments = ["hold", "--port", String(web.port), "--seconds", "60"]
        let output = Pipe(), input = Pipe()
        holder.standardOutput = output
        holder.standardInput = input
        try holder.run()
        defer { try? input.fileHandleForWriting.close(); holder.waitUntilExit() }
        let line = String(decoding: output.fileHandleForReading.availableDataLine(timeout: 20), as: UTF8.self)
        XCTAssertTrue(line.contains("\"ready\": true"), line)
        XCTAssertEqual(timedGet(web, "/api/status").status, 200)

        let signalled = Date()
        kill(web.process.processIdentifier, SIGTERM)
        let exited = pollExit(web.process, timeout: 10)
        let took = Date().timeIntervalSince(signalled)
        print("WebLimitsTests: stepd-web exited \(String(format: "%.2f", took)) s after SIGTERM with \(line)")
        XCTAssertTrue(exited, "stepd-web still running 10 s after SIGTERM")
        XCTAssertLessThan(took, 2, web.log)
        if exited { XCTAssertEqual(web.process.terminationStatus, 0, web.log) }
        if !exited { kill(web.process.processIdentifier, SIGKILL) }
    }

    private func pollExit(_ process: Process, timeout: TimeInterval) -> Bool {
        let until = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < until { usleep(10_000) }  // poll interval of a wait for a state, not a fixed wait
        return !process.isRunning
    }
}

/// A peer in the daemon's place that discards or never answers: stepd-web's 10 s daemon time-outs, waited out.
final class WebSilentPeerTests: XCTestCase {
    /// What stepd-web does not send on is still answered and closed: a peer that speaks the protocol as the daemon
    /// does for a line it discards (an ERROR without an id, docs/protocol.md "Limits") gets its request answered
    /// 400 with that message, and one that never answers gets 504 after WebLimits.daemonReplySeconds; either way
    /// the connection to it is closed. (A peer, not the daemon: stepd-web's own checks keep every line it sends
    /// well under the daemon's 4096 bytes, and the daemon does not hang.) The event stream's watch, unanswered, is
    /// given up after the same 10 s and the page told. ~21 s.
    func testAnErrorWithoutIdAnswersTheRequestAndASilentDaemonTimesOut() throws {
        let directory = try TemporaryDirectory()
        let peer = try ProtocolPeer(path: directory.file("peer.sock"))
        defer { peer.stop() }
        let web = try WebServer(socket: peer.path, directory: directory, extra: ["--tiles", "none"])
        defer { web.stop() }
        let refused = timedGet(web, "/api/status")
        XCTAssertEqual(refused.status, 400, refused.body)
        XCTAssertLessThan(refused.seconds, 5, "answered, not left to the 10 s time-out")
        XCTAssertTrue(refused.body.contains("request line longer than 4096 bytes, discarded"), refused.body)
        try pollUntil("the peer's connection closed", timeout: 2, every: 0.05, detail: "\(peer.open) open") { peer.open == 0 }

        let silent = timedGet(web, "/api/steps", timeout: 30)
        XCTAssertEqual(silent.status, 504, silent.body)
        XCTAssertTrue(silent.body.contains("did not answer within 10 s"), silent.body)
        XCTAssertLessThan(silent.seconds, 12)
        try pollUntil("the peer's connection closed", timeout: 2, every: 0.05, detail: "\(peer.open) open") { peer.open == 0 }
        XCTAssertEqual(peer.accepted, 2)

        // The event stream's watch gets the same 10 s for its WATCH reply: the page is told, and stepd-web tries
        // again rather than waiting on that connection for good.
        let events = try SSEClient(port: web.port)
        defer { events.close() }
        let started = Date()
        let frame = try events.frame(containing: "did not answer within 10 s", timeout: 20)
        XCTAssertTrue(frame.hasPrefix("event: link\ndata: {") && frame.contains("\"connected\":false"), frame)
        XCTAssertLessThan(Date().timeIntervalSince(started), 12)
        try pollUntil("the watch's connection closed", timeout: 2, every: 0.05, detail: "\(peer.open) open") { peer.open <= 1 }
    }
}

/// A client that reads nothing: stepd-web's 30 s without room, waited out; the test checks only that the
/// connection lasted that long and then closed (a lower bound, which load cannot make fail).
final class WebWriteStallTests: XCTestCase {
    /// A client that asks for a file 200 times in one write and never reads (a 4 KiB receive buffer): once the
    /// socket's buffers are full and stepd-web's own is past its mark, the connection is closed after
    /// WebLimits.writeStallSeconds (30 s). stepd-web's end of that connection is found in /proc/net/tcp (by the
    /// client's port) and looked for among its descriptors in /proc: other sockets of stepd-web that come and go
    /// meanwhile (its link to the daemon) change nothing. ~35 s.
    func testAClientThatReadsNothingIsClosedAfterThirtySecondsWithoutRoom() throws {
        let directory = try TemporaryDirectory()
        let (daemon, web) = try serve(directory)
        defer { web.stop(); daemon.terminate() }
        func sockets() -> [String] {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(web.process.processIdentifier)/fd")) ?? []
            return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(web.process.processIdentifier)/fd/\($0)") }
                .filter { $0.hasPrefix("socket:") }
        }
        /// The inode of the accepted socket whose peer is the client's port (0 while it waits in the accept queue).
        func serverInode(clientPort: Int) -> String? {
            let local = String(format: ":%04X", web.port), remote = String(format: ":%04X", clientPort)
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                for line in procFileText(table).split(separator: "\n") {
                    let field = line.split(separator: " ", omittingEmptySubsequences: true)
                    if field.count > 9, field[1].hasSuffix(local), field[2].hasSuffix(remote), field[9] != "0" { return String(field[9]) }
                }
            }
            return nil
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(web.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(connected, 0)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let clientPort = Int(UInt16(bigEndian: bound.sin_port))
        let requests = Array(String(repeating: "GET /leaflet/leaflet.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 200).utf8)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = requests.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var inode = ""
        try pollUntil("stepd-web to hold the connection from port \(clientPort)", timeout: 10, every: 0.05,
                      detail: "\(sockets())") {
            inode = serverInode(clientPort: clientPort) ?? ""
            return !inode.isEmpty && sockets().contains("socket:[\(inode)]")
        }
        let opened = Date()
        try pollUntil("stepd-web to close the connection of a client that reads nothing", timeout: 60, every: 0.5,
                      detail: "socket:[\(inode)] among \(sockets())") { !sockets().contains("socket:[\(inode)]") }
        let held = Date().timeIntervalSince(opened)
        print("WebLimitsTests: a client reading nothing was closed after \(String(format: "%.1f", held)) s")
        XCTAssertGreaterThan(held, 29, "closed before the client had 30 s without room")
        XCTAssertEqual(timedGet(web, "/api/status").status, 200)
    }
}

/// A raw HTTP client of `/api/events`: the frames as they come.
final class SSEClient {
    private let fd: Int32
    private var text = ""

    init(port: Int) throws {
        let connected: Bool
        (fd, connected) = connectToLoopback(port: port)
        guard connected else {
            let code = errno
            Glibc.close(fd)
            throw NSError(domain: "SSEClient", code: Int(code))
        }
        let request = Array("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    }

    /// The first frame (text up to a blank line) that contains `needle`.
    func frame(containing needle: String, timeout: TimeInterval) throws -> String {
        let until = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < until {
            if let found = text.components(separatedBy: "\n\n").first(where: { $0.contains(needle) }) {
                return String(found[(found.range(of: "event:")?.lowerBound ?? found.startIndex)...])
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        throw NSError(domain: "SSEClient", code: 1, userInfo: [NSLocalizedDescriptionKey: "no frame with \(needle) in: \(text.suffix(1000))"])
    }

    func close() { Foundation.close(fd) }
}

extension FileHandle {
    /// The first line written to this pipe's end, waiting up to `timeout`.
    func availableDataLine(timeout: TimeInterval) -> Data {
        var data = Data()
        let until = Date().addingTimeInterval(timeout)
        var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        while !data.contains(0x0A), Date() < until {
            guard poll(&descriptor, 1, 200) > 0 else { continue }
            let chunk = availableData
            if chunk.isEmpty { break }
            data.append(chunk)
        }
        return data
    }
}

/// A Unix-socket peer speaking the daemon's protocol for one situation each: it greets with VERSION; to
/// `status` it answers an ERROR without an id (what the daemon sends for a line it discards unread), to anything
/// else nothing; or, to a command named in `refusals`, the ERROR line given there. It counts the connections
/// accepted and those still open.
final class ProtocolPeer: Sendable {
    let path: String
    private let refusals: [String: String]
    private let listener: Int32
    private let counts = Locked((open: 0, accepted: 0))

    var open: Int { counts.value.open }
    var accepted: Int { counts.value.accepted }

    init(path: String, refusals: [String: String] = [:]) throws {
        self.path = path
        self.refusals = refusals
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            throw NSError(domain: "ProtocolPeer", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))])
        }
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            counts.withLock { $0.open += 1; $0.accepted += 1 }
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private func serve(_ fd: Int32) {
        defer {
            close(fd)
            counts.withLock { $0.open -= 1 }
        }
        send(fd, "{\"class\":\"VERSION\",\"release\":\"0.1.0\",\"proto_major\":1,\"proto_minor\":0}\n")
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if let refusal = refusals.first(where: { line.contains("\"cmd\":\"\($0.key)\"") })?.value {
                    send(fd, refusal + "\n")
                } else if line.contains("\"status\"") {
                    send(fd, "{\"class\":\"ERROR\",\"message\":\"request line longer than 4096 bytes, discarded\"}\n")
                }
            }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}
