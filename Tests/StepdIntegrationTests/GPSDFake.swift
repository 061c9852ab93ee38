import Foundation
import XCTest

/// A real gpsd fed by gpsfake (gpsd-tools) from an NMEA log, listening on a loopback port.
final class GPSDFake {
    static let gpsfake = "/usr/bin/gpsfake"

    let port: Int
    private(set) var process = Process()
    private let logPath: String
    private let nmeaPath: String
    /// How many times gpsfake was started again because its gpsd listed no device.
    private(set) var restarts = 0

    /// Skips the test when gpsfake or gpsd is not installed.
    static func requireTools() throws {
        for tool in [gpsfake, "/usr/sbin/gpsd"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is not installed (packages gpsd, gpsd-tools)")
        }
    }

    /// Starts gpsd on `port` reading `log` once (-1), opening the device at once (-n) rather than when a
    /// client watches, one sentence every `cycleSeconds`; returns once gpsd accepts connections and lists the
    /// fake receiver among its devices.
    /// With `stepped`, gpsfake sends one sentence per line written to it (`-i`, `send(sentences:)`, `play()`),
    /// still at most one every `cycleSeconds`, and nothing otherwise: a receiver that goes quiet while gpsd stays
    /// connected, or a log held back until every client is watching.
    private var input: Pipe?

    init(log: String, port: Int, cycleSeconds: Double = 0.005, stepped: Bool = false, directory: TemporaryDirectory) throws {
        self.port = port
        nmeaPath = log
        logPath = directory.file("gpsfake-\(port)-\(UUID().uuidString.prefix(4)).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        // gpsfake adds its pty to gpsd once, over gpsd's control socket, as soon as the socket's file exists, and
        // a connect that fails is silent (gps/fake.py, add_device): that gpsd never has a device. (Stop 36 saw
        // `"devices":[]` to every client, for ever, about once in ten starts while a daemon retried.) Such a gpsd
        // is stopped before it sent anything, and gpsfake started again.
        for attempt in 1...3 {
            try launch(cycleSeconds: cycleSeconds, stepped: stepped)
            if Self.listsADevice(port: port, timeout: 10) { return }
            stop()
            restarts += 1
            print("GPSDFake: gpsd on \(port) listed no device after 10 s (attempt \(attempt) of 3); starting gpsfake again")
            process = Process()
        }
        throw NSError(domain: "GPSDFake", code: 2, userInfo: [NSLocalizedDescriptionKey: "gpsd on \(port) never listed gpsfake's device: \(output)"])
    }

    private func launch(cycleSeconds: Double, stepped: Bool) throws {
        let output = FileHandle(forWritingAtPath: logPath)!
        output.seekToEndOfFile()
        // Foundation starts it in a process group of its own (pgid = pid), which its gpsd joins, so that
        // stop() reaches both: gpsfake kills gpsd on SIGTERM but then does not always exit.
        process.executableURL = URL(fileURLWithPath: Self.gpsfake)
        if stepped {
            let pipe = Pipe()
            input = pipe
            process.arguments = ["-n", "-1", "-q", "-i", "-c", String(cycleSeconds), "-P", String(port), nmeaPath]
            process.standardInput = pipe
        } else {
            process.arguments = ["-n", "-1", "-q", "-c", String(cycleSeconds), "-P", String(port), nmeaPath]
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if Self.accepts(port: port) { return }
            if !process.isRunning { break }
            usleep(20_000)  // poll interval of a wait for a state, not a fixed wait
        }
        throw NSError(domain: "GPSDFake", code: 1, userInfo: [NSLocalizedDescriptionKey: "gpsd did not listen on \(port): \(self.output)"])
    }

    /// Whether gpsd answers `?DEVICES;` with a device within `timeout`.
    static func listsADevice(port: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let devices = try? GPSDWatcher(port: port, command: "?DEVICES;\n").reply(class: "DEVICES", timeout: 2),
               let list = devices["devices"] as? [Any], !list.isEmpty {
                return true
            }
            usleep(100_000)  // poll interval of a wait for a state, not a fixed wait
        }
        return false
    }

    /// Lets a stepped gpsfake send `count` more sentences.
    func send(sentences count: Int) {
        input?.fileHandleForWriting.write(Data(String(repeating: "\n", count: count).utf8))
    }

    /// Lets a stepped gpsfake play its whole log, at its pace. The lines are counted in bytes: in a CRLF log,
    /// Swift reads "\r\n" as one Character.
    func play() throws {
        let lines = try Data(contentsOf: URL(fileURLWithPath: nmeaPath)).filter { $0 == 0x0A }.count
        send(sentences: lines + 1)
    }

    /// Plays a stepped log once `daemon` has connected to gpsd `connections` times in all: a daemon that
    /// retries (doubling its wait from --gps-retry-s) connects when its next try comes, which under load can be
    /// seconds after gpsd listens, and the log must not have played by then.
    func play(once daemon: Daemon, hasConnected connections: Int = 1) throws {
        try daemon.waitUntil(timeout: 60, "the daemon to watch gpsd (connection \(connections))") { status in
            ((status["gps"] as? [String: Any])?["connections"] as? Int ?? 0) >= connections
        }
        try play()
    }

    /// Stops gpsfake, which kills its gpsd.
    func stop() {
        guard process.isRunning else { return }
        let group = -process.processIdentifier
        kill(group, SIGTERM)
        let deadline = Date().addingTimeInterval(2)
        while (process.isRunning || Self.accepts(port: port)) && Date() < deadline { usleep(20_000) }  // poll interval of a wait for a state, not a fixed wait
        kill(group, SIGKILL)
        process.waitUntilExit()
        while Self.accepts(port: port) && Date() < deadline.addingTimeInterval(3) { usleep(20_000) }  // poll interval of a wait for a state, not a fixed wait
    }

    deinit { stop() }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    static func accepts(port: Int) -> Bool {
        let (fd, connected) = connectToLoopback(port: port)
        close(fd)
        return connected
    }

    /// A loopback TCP port nobody listens on now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The reference reading of the log: a plain gpsd client on the same gpsd that sends what `gpspipe -w`
/// sends (`?WATCH={"enable":true,"json":true}`) and keeps every line, as gpspipe prints it. (gpspipe itself,
/// started from a Swift process, receives only gpsd's VERSION line here, so the test speaks the protocol.)
final class GPSDWatcher {
    private let fd: Int32
    private var pending = Data()
    private(set) var lines: [String] = []

    /// Connects and sends `command`: by default the WATCH that gpspipe -w sends.
    init(port: Int, command: String = "?WATCH={\"enable\":true,\"json\":true};\n") throws {
        let connected: Bool
        (fd, connected) = connectToLoopback(port: port)
        guard connected else {
            close(fd)
            throw NSError(domain: "GPSDWatcher", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "cannot connect to gpsd on \(port)"])
        }
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = command.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    convenience init(port: Int, directory: TemporaryDirectory) throws {
        try self.init(port: port)
    }

    /// The first report of `class` gpsd sends within `timeout`.
    func reply(class name: String, timeout: TimeInterval) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, poll() {
            for line in lines where line.contains("\"class\":\"\(name)\"") {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] { return object }
            }
        }
        throw NSError(domain: "GPSDWatcher", code: 2, userInfo: [NSLocalizedDescriptionKey: "gpsd sent no \(name): \(lines)"])
    }

    deinit { close(fd) }

    /// Reads what has arrived; false once gpsd closed the connection.
    @discardableResult
    private func poll() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n == 0 { return false }
        if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
        pending.append(contentsOf: chunk[0..<n])
        while let newline = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending = Data(pending[(newline + 1)...])
        }
        return true
    }

    /// Waits for gpsd's reply to the WATCH: from then on, every report is sent to this client.
    func waitForWatch(timeout: TimeInterval = 20) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !lines.contains(where: { $0.contains("\"class\":\"WATCH\"") }) {
            guard Date() < deadline, poll() else {
                throw NSError(domain: "GPSDWatcher", code: 1, userInfo: [NSLocalizedDescriptionKey: "gpsd did not answer the WATCH: \(lines)"])
            }
        }
    }

    /// The TPV reports received so far.
    var reports: [[String: Any]] {
        lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            .filter { $0["class"] as? String == "TPV" }
    }

    /// Waits until the log has been replayed: TPVs arrived, `ready` holds for them, and none came for
    /// `quietSeconds`.
    func waitUntilQuiet(quietSeconds: Double = 1.0, timeout: TimeInterval = 90,
                        ready: ([[String: Any]]) -> Bool = { _ in true }) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var count = -1
        var since = Date()
        while Date() < deadline, poll() {
            let now = lines.filter { $0.contains("\"class\":\"TPV\"") }.count
            if now != count {
                count = now
                since = Date()
            } else if now > 0, Date().timeIntervalSince(since) >= quietSeconds, ready(reports) {
                break
            }
        }
        return reports
    }
}

/// Tests/fixtures/nmea-walk: writes a generated NMEA log and its ground truth.
enum NMEAWalk {
    static func generate(_ arguments: [String], into directory: TemporaryDirectory, name: String) throws -> (log: String, truth: [String: Any]) {
        let log = directory.file("\(name).nmea")
        let truth = directory.file("\(name).truth.json")
        let script = Binaries.repository.appendingPathComponent("Tests/fixtures/nmea-walk").path
        let result = try runCommand("/usr/bin/env", ["python3", script, "--truth", truth] + arguments)
        guard result.status == 0 else {
            throw NSError(domain: "NMEAWalk", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: result.stderr])
        }
        try result.stdout.write(toFile: log, atomically: true, encoding: .utf8)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: truth))) as? [String: Any]
        return (log, object ?? [:])
    }
}
