import Foundation
import Locking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What stepd-web costs, and lets the daemon keep, under hostile HTTP clients (issue 39, points 1, 2, 7 and 10): a
/// long reply passes through as the client reads it, stepd-web holds a small bounded pool of daemon connections and
/// takes no slot of root's, a flood of wrong tokens is a few lines of log, and a connect that the daemon's full
/// listen queue refuses is tried again.
final class WebDaemonLoadTests: XCTestCase {
    private var isRelease: Bool { Binaries.productsDirectory.path.contains("release") }

    /// 100 HTTP clients ask stepd-web for a stored range's GeoJSON export (80,000 points, 4 MB) and never read
    /// (scripts/bench-load-web-hostile): stepd-web reads the daemon only as fast as each client takes the bytes,
    /// so its RSS grows by a few MB (debug build: 5 MB; no export is held whole). A client
    /// that reads gets the whole export; root's `status` and the page's GET of /api/status are answered
    /// throughout. ~25 s.
    func testHundredNeverReadingExportsKeepStepdWebSmall() throws {
        _ = Binaries.stepdWeb  // makes the link the script runs
        let run = try runCommand(Binaries.repository.appendingPathComponent("scripts/bench-load-web-hostile").path,
                                 ["--bin", Binaries.productsDirectory.path, "--seconds", "10", "--json"], timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderr)
        print("WebDaemonLoadTests exports: \(run.stdout)")
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        let whole = try XCTUnwrap(result["whole_export"] as? [String: Any], run.stdout)
        XCTAssertEqual(whole["status"] as? Int, 200, run.stdout)
        XCTAssertEqual(whole["points"] as? Int, 80_000, run.stdout)
        XCTAssertGreaterThan(whole["bytes"] as? Int ?? 0, 3_000_000, run.stdout)
        let web = try XCTUnwrap(result["web_rss_mb"] as? [String: Double], run.stdout)
        XCTAssertLessThan(web["peak"]! - web["before"]!, 15, "stepd-web's RSS grew from \(web["before"]!) to \(web["peak"]!) MB")
        if isRelease { XCTAssertLessThan(web["peak"]!, 60, run.stdout) }
        XCTAssertEqual(result["alive"] as? [String: Bool], ["web": true, "daemon": true], run.stdout)
        XCTAssertGreaterThan(result["root_status"] as? Int ?? 0, 10, run.stdout)
        XCTAssertEqual(result["root_status_failed"] as? Int, 0, run.stdout)
        let page = result["page_status"] as? [String: Int] ?? [:]
        XCTAssertGreaterThan(page["200"] ?? 0, 5, run.stdout)
        XCTAssertEqual(page.keys.sorted(), ["200"], "the page's status request failed while exports were held: \(run.stdout)")
    }

    /// stepd-web in the admin group (which may reset) gets 400 history requests at once: it holds at most its pool's
    /// 8 connections to the daemon, answers the rest 503 with Retry-After once its queue is full, and root's
    /// `status` on a new connection is answered every time: admin connections count in their user's share, so
    /// stepd-web cannot take the slots kept for root.
    func testFourHundredHistoryRequestsFromAnAdminStepdWebLeaveRootsStatusAnswered() throws {
        try Unprivileged.requireTools()
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps", "--admin-group", "daemon",
                                            "--max-clients", "32"], directory: directory)
        defer { daemon.terminate() }
        Unprivileged.openSocket(daemon)
        // uid 65533 in group "daemon" (gid 1): an admin, as docs/web.md sets stepd-web up for reset.
        let web = try BackgroundWeb(["/usr/bin/setpriv", "--reuid=65533", "--regid=65533", "--groups=1", Binaries.stepdWeb],
                                    socket: daemon.socketPath, directory: directory)
        defer { web.stop() }

        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        load.arguments = ["-c", Self.concurrentGets, String(web.port), "/api/history?bin=minute&from=\(Self.daysAgo(6))", "400"]
        let output = Pipe()
        load.standardOutput = output
        try load.run()
        var answered = 0, failures: [String] = [], mostClients = 0
        while load.isRunning || answered < 10 {
            do {
                let status = try daemon.connect().request(["cmd": "status"])
                answered += 1
                mostClients = max(mostClients, status["clients"] as? Int ?? 0)
            } catch {
                failures.append("\(error)")
            }
            usleep(20_000)  // the pace of the load or probe under test, not a wait for an event
        }
        load.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        print("WebDaemonLoadTests history: \(text.trimmingCharacters(in: .whitespacesAndNewlines)); root's status answered "
              + "\(answered) times, refused \(failures.count); the daemon's clients at most \(mostClients)")
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
        let codes = result["codes"] as? [String: Int] ?? [:]
        XCTAssertEqual(failures, [], "root's status refused while stepd-web was loaded")
        XCTAssertEqual(Set(codes.keys).subtracting(["200", "503"]), [], text)
        XCTAssertEqual(codes.values.reduce(0, +), 400, text)
        XCTAssertGreaterThanOrEqual(codes["200"] ?? 0, 36, "the 4 connections for ranges and the 32 waiting: \(text)")
        XCTAssertEqual(result["no_retry_after"] as? [String], [], text)
        // The pool's 8, root's own connection and slack for a connection closing while the next opens.
        XCTAssertLessThanOrEqual(mostClients, 12, "stepd-web held more connections than its pool")
        XCTAssertTrue(web.process.isRunning, web.log)
    }

    /// 20,000 resets with a wrong token: every one is answered 401, and stepd-web logs the first of each 10 s and
    /// then the count of the rest ("... (N more times in the last 10 s)"), a handful of lines, not one a refusal.
    func testTwentyThousandWrongTokensAreAFewLinesOfLog() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps"], directory: directory)
        defer { daemon.terminate() }
        let tokenFile = directory.file("token")
        try "the-right-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let web = try BackgroundWeb([Binaries.stepdWeb], socket: daemon.socketPath, directory: directory,
                                    extra: ["--token-file", tokenFile])
        defer { web.stop() }
        let run = try runCommand("/usr/bin/python3", ["-c", Self.wrongTokens, String(web.port), "4", "5000"], timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines), #"{"401": 20000}"#)

        // The first line of each 10 s and a count of the repeats; wait for the counts to add up.
        var lines: [String] = []
        func told() -> Int {
            lines = web.log.split(separator: "\n").map(String.init).filter { $0.contains("reset refused: wrong token") }
            return lines.reduce(0) { sum, line in
                // A first line, or "(once more in the last 10 s)", tells one.
                guard let range = line.range(of: #"\((\d+) more times in the last 10 s\)"#, options: .regularExpression) else {
                    return sum + 1
                }
                let count = Int(line[range].dropFirst().prefix { $0.isNumber }) ?? 0
                return sum + count
            }
        }
        try pollUntil("20,000 refusals told", timeout: 60, every: 0.2, detail: "\(told()) told in \(lines.count) lines") {
            told() == 20_000
        }
        print("WebDaemonLoadTests tokens: 20,000 wrong tokens, \(lines.count) lines of log: \(lines.map { $0.suffix(80) })")
        XCTAssertLessThanOrEqual(lines.count, 20, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.contains("more times in the last 10 s)") }, lines.joined(separator: "\n"))
    }

    /// The daemon's listen queue is full (a local connection flood): the connect gets EAGAIN. stepd-web says so
    /// once, tries again after a short pause, and answers 200 when the queue has room, instead of 503 at once.
    func testAConnectRefusedWithEAGAINIsTriedAgain() throws {
        let directory = try TemporaryDirectory()
        let peer = try FloodedPeer(path: directory.file("flooded.sock"))
        defer { peer.stop() }
        let web = try BackgroundWeb([Binaries.stepdWeb], socket: peer.path, directory: directory)
        defer { web.stop() }

        let reply = Locked<(status: Int, body: String)?>(nil)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(web.port)/api/status")!)
        request.timeoutInterval = 30
        URLSession.shared.dataTask(with: request) { data, response, _ in
            reply.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode ?? -1, data.map { String(decoding: $0, as: UTF8.self) } ?? "") }
        }.resume()
        try pollUntil("stepd-web to tell of the full queue", timeout: 20, every: 0.005, detail: "reply \(String(describing: reply.value)); log:\n\(web.log)") {
            web.log.contains("its queue of new connections is full")
        }
        try peer.drainAndAnswer()
        try pollUntil("the reply", timeout: 20, every: 0.05) { reply.value != nil }
        XCTAssertEqual(reply.value?.status, 200, reply.value?.body ?? "")
        XCTAssertEqual(reply.value?.body, #"{"class":"STATUS","clients":1,"id":1}"#)
    }

    // MARK: Helpers

    private static func daysAgo(_ days: Int) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date().addingTimeInterval(-Double(days) * 86_400))
    }

    /// `python3 -c concurrentGets PORT PATH N`: N threads GET PATH at the same moment; prints the statuses counted,
    /// and the bodies of the 503s without Retry-After.
    private static let concurrentGets = """
        import http.client, json, sys, threading
        port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        codes, missing, lock, go = {}, [], threading.Lock(), threading.Event()
        def one():
            go.wait()
            retry, body = None, b""
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                c.request("GET", path)
                r = c.getresponse()
                body, key, retry = r.read(), str(r.status), r.getheader("Retry-After")
            except Exception as e:
                key = type(e).__name__
            with lock:
                codes[key] = codes.get(key, 0) + 1
                if key == "503" and retry is None:
                    missing.append(body[:200].decode(errors="replace"))
        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        go.set()
        for t in threads:
            t.join()
        print(json.dumps({"codes": codes, "no_retry_after": missing}))
        """

    /// `python3 -c wrongTokens PORT THREADS EACH`: POST /api/reset with a wrong token, on keep-alive connections;
    /// prints the statuses counted.
    private static let wrongTokens = """
        import http.client, json, sys, threading
        port, threads, each = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        codes, lock = {}, threading.Lock()
        def run():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for _ in range(each):
                try:
                    c.request("POST", "/api/reset", headers={"Authorization": "Bearer wrong-token"})
                    r = c.getresponse()
                    r.read()
                    key = str(r.status)
                except Exception as e:
                    key = type(e).__name__
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                with lock:
                    codes[key] = codes.get(key, 0) + 1
        workers = [threading.Thread(target=run) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print(json.dumps(codes))
        """
}

/// stepd-web started by a command line of our choosing (as another user through setpriv) on a free port.
private final class BackgroundWeb {
    let process = Process()
    let port = GPSDFake.freePort()
    let logPath: String

    init(_ command: [String], socket: String, directory: TemporaryDirectory, extra: [String] = []) throws {
        logPath = directory.file("stepd-web-\(port).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)!
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst()) + ["--listen", "127.0.0.1:\(port)", "--socket", socket, "--tiles", "none"] + extra
        process.standardOutput = log
        process.standardError = log
        try process.run()
        try pollUntil("stepd-web to listen", timeout: 20, every: 0.02, detail: log.description) {
            guard process.isRunning else { throw NSError(domain: "BackgroundWeb", code: 1, userInfo: [NSLocalizedDescriptionKey: self.log]) }
            return GPSDFake.accepts(port: port)
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// A Unix socket whose listen queue is full: a backlog of 0 and one connection of ours waiting in it, so that the
/// next connect gets EAGAIN, as during a flood of local connections. `drainAndAnswer` makes room and answers the
/// next connection as the daemon would `status`.
private final class FloodedPeer {
    let path: String
    private let listener: Int32
    private let filler: Int32

    init(path: String) throws {
        self.path = path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = Self.address(path)
        let bound = withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 0) == 0 else { throw NSError(domain: "FloodedPeer", code: Int(errno)) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let filler = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw NSError(domain: "FloodedPeer", code: Int(errno)) }
        self.listener = listener
        self.filler = filler
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        return address
    }

    /// Takes our own connection off the queue, then greets the next one and answers its request with a STATUS.
    func drainAndAnswer() throws {
        let ours = accept(listener, nil, nil)
        guard ours >= 0 else { throw NSError(domain: "FloodedPeer.accept", code: Int(errno)) }
        close(ours)
        close(filler)
        let client = accept(listener, nil, nil)
        guard client >= 0 else { throw NSError(domain: "FloodedPeer.accept", code: Int(errno)) }
        defer { close(client) }
        send(client, "{\"class\":\"VERSION\",\"release\":\"0.1.0\",\"proto_major\":1,\"proto_minor\":0}\n")
        var request = Data()
        var byte: UInt8 = 0
        while read(client, &byte, 1) == 1, byte != 0x0A { request.append(byte) }
        send(client, "{\"class\":\"STATUS\",\"clients\":1,\"id\":1}\n")
        // Wait for stepd-web to close its side, so that the reply is not cut by ours.
        while read(client, &byte, 1) == 1 {}
    }

    private func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    func stop() {
        close(listener)
        unlink(path)
    }
}
