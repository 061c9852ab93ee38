import Foundation
import Locking
import XCTest

/// The real `stepd` binary running in the background on a temporary socket.
final class Daemon {
    let process = Process()
    let socketPath: String
    let logPath: String
    private let directory: TemporaryDirectory

    /// Starts `stepd` with `arguments` (plus `--socket`) and waits until its socket accepts connections.
    init(arguments: [String], directory: TemporaryDirectory? = nil, environment: [String: String] = [:],
         socketName: String = "stepd.sock", waitForSocket: Bool = true) throws {
        self.directory = try directory ?? TemporaryDirectory()
        socketPath = self.directory.file(socketName)
        logPath = self.directory.file("stepd-\(UUID().uuidString.prefix(4)).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)!
        process.executableURL = URL(fileURLWithPath: Binaries.stepd)
        // Each daemon keeps its history in its own folder, never in /var/lib/stepd, so a count never leaks
        // from one test (or a previous run) into another.
        let state = arguments.contains("--state-dir") ? [] : ["--state-dir", self.directory.file("state")]
        // A daemon given no gpsd would read localhost:2947, where the machine's own gpsd may serve a real receiver
        // (scripts/setup leaves system services alone): it gets a loopback port nobody listens on instead, as on a
        // machine without gpsd.
        let choosesGPS = arguments.contains { $0 == "--no-gps" || $0 == "--demo" || $0.hasPrefix("--gpsd") || $0.hasPrefix("--config") }
        let gps = choosesGPS ? [] : ["--gpsd", "127.0.0.1:\(GPSDFake.freePort())"]
        process.arguments = arguments + state + gps + ["--socket", socketPath]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        if waitForSocket { try self.waitForSocket() }
    }

    func waitForSocket(timeout: TimeInterval = 20) throws {
        try pollUntil("stepd to listen on \(socketPath)", timeout: timeout, every: 0.02, detail: "log:\n\(log)") {
            if let client = try? SocketClient(path: socketPath) {
                client.close()
                return true
            }
            guard process.isRunning else { throw ProcessExited(what: "stepd", log: log) }
            return false
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func connect() throws -> SocketClient { try SocketClient(path: socketPath) }

    /// Sends SIGTERM and waits for the exit status.
    @discardableResult
    func terminate(signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }

    /// Polls STATUS until `condition` holds and returns that STATUS; a timeout fails the test.
    @discardableResult
    func waitUntil(timeout: TimeInterval = 60, _ what: String, file: StaticString = #filePath, line: UInt = #line,
                   _ condition: ([String: Any]) throws -> Bool) throws -> [String: Any] {
        let client = try connect()
        return try pollFor(what, timeout: timeout, detail: "log:\n\(log)", file: file, line: line) {
            let status = try client.request(["cmd": "status"])
            return try condition(status) ? status : nil
        }
    }

    /// Polls STEPS until `condition` holds and returns that reply.
    @discardableResult
    func waitForSteps(timeout: TimeInterval = 30, _ what: String, file: StaticString = #filePath, line: UInt = #line,
                      _ condition: ([String: Any]) throws -> Bool) throws -> [String: Any] {
        let client = try connect()
        var last: [String: Any] = [:]
        return try pollFor(what, timeout: timeout, detail: "last STEPS: \(last)", file: file, line: line) {
            last = try client.request(["cmd": "steps"])
            return try condition(last) ? last : nil
        }
    }
}

/// A plain blocking client of the daemon's socket, independent of stepctl's code. A test may write from one
/// thread while it reads on another (FuzzTests): what has been read is behind a lock.
final class SocketClient: Sendable {
    private let fd: Int32
    private let pending = Locked(Data())
    private let versionLine = Locked<String?>(nil)

    /// The greeting, when the client was made with `readVersion`.
    var version: [String: Any] { versionLine.withLock { $0 }.flatMap { try? Self.object($0) } ?? [:] }

    init(path: String, readVersion: Bool = true, receiveTimeout: TimeInterval = 10) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw NSError(domain: "SocketClient", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "connect \(path)"])
        }
        var tv = timeval(tv_sec: Int(receiveTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if readVersion {
            let line = try readLine()
            _ = try Self.object(line)
            versionLine.withLock { $0 = line }
        }
    }

    deinit { Glibc.close(fd) }
    func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    func sendLine(_ text: String) throws {
        try sendRaw(Data((text + "\n").utf8))
    }

    func sendRaw(_ data: Data) throws {
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { throw NSError(domain: "SocketClient", code: Int(errno)) }
                offset += n
            }
        }
    }

    func readLine() throws -> String {
        while true {
            let next: String? = pending.withLock { pending in
                guard let newline = pending.firstIndex(of: 0x0A) else { return nil }
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[(newline + 1)...])
                return line
            }
            if let next { return next }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { throw NSError(domain: "SocketClient", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "connection closed or timed out"]) }
            pending.withLock { $0.append(contentsOf: chunk[0..<n]) }
        }
    }

    func readObject() throws -> [String: Any] {
        try Self.object(try readLine())
    }

    private static func object(_ line: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw NSError(domain: "SocketClient", code: 0, userInfo: [NSLocalizedDescriptionKey: "not an object: \(line)"])
        }
        return object
    }

    /// Sends a request and returns the next reply that is not a pushed event.
    func request(_ object: [String: Any]) throws -> [String: Any] {
        try sendLine(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        while true {
            let reply = try readObject()
            let cls = reply["class"] as? String ?? ""
            if !Self.eventClasses.contains(cls) { return reply }
        }
    }

    static let eventClasses: Set<String> = ["STEP", "POSITION", "VISIT", "PEDOMETER", "MOTION", "ACTIVITY"]
}
