import Foundation
import Locking
import StepProtocol
import XCTest

/// Nothing a client asks of the store slows counting or holds a stop back: track exports are built off the
/// processing queue, history reads run beside the commits and give up when the daemon stops.
final class StoreLoadTests: XCTestCase {
    private func walking(state: String, directory: TemporaryDirectory) throws -> Daemon {
        try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                               "--state-dir", state], directory: directory)
    }

    func testSigtermWithinTwoSecondsWithFourHugeHistoryRequestsInFlight() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try PreparedHistory.create(state: state, directory: directory)
        // 400 days of 14 walking hours: a full retention's worth of minute bins.
        try PreparedHistory.fill(state: state, """
            first = int(now // 60) - 400 * 1440
            db.executemany("INSERT OR IGNORE INTO minute_bin (minute, steps, distance_m) VALUES (?, 40, 28.0)",
                           ((first + d * 1440 + 420 + m,) for d in range(400) for m in range(14 * 60)))
            """)
        let daemon = try walking(state: state, directory: directory)
        try daemon.waitUntil(timeout: 30, "steps") { _ in
            (try daemon.connect().request(["cmd": "steps"])["steps"] as? Int ?? 0) > 5
        }
        // Ten years of days (the most one request may ask), and year 1 to 9999, twenty times on each of four
        // connections, sent without waiting.
        let tenYears = Timestamp.string(Date().addingTimeInterval(-3650 * 86_400))
        let huge = [["cmd": "history", "bin": "day", "from": tenYears],
                    ["cmd": "history", "bin": "day", "from": "0001-01-01T00:00:00Z", "to": "9999-12-31T00:00:00Z"]]
        var clients: [SocketClient] = []
        for _ in 0..<4 {
            let client = try daemon.connect()
            for i in 0..<20 {
                let data = try JSONSerialization.data(withJSONObject: huge[i % 2])
                try client.sendLine(String(decoding: data, as: UTF8.self))
            }
            clients.append(client)
        }
        // In flight: the first answer arrived, 79 are queued or running.
        let first = try clients[0].readObject()
        XCTAssertEqual(first["class"] as? String, "HISTORY", "\(first)")
        XCTAssertGreaterThan(first["steps"] as? Int ?? 0, 400 * 14 * 60 * 40 / 2)

        let stop = Date()
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
        let elapsed = Date().timeIntervalSince(stop)
        print("SIGTERM with 4 x 20 history requests in flight: stopped in \(String(format: "%.2f", elapsed)) s")
        XCTAssertLessThan(elapsed, 2, daemon.log)
        XCTAssertTrue(daemon.log.contains(" saved to "), daemon.log)
    }

    /// Issue 39, 8: SIGTERM while 48 connections wait for history and a stored track: the readers answer after
    /// the server has stopped, onto an event loop that must still run (else swift-nio's "Cannot schedule tasks
    /// on an EventLoop that has already shut down", a crash with SWIFTNIO_STRICT=1, which NIO will make the default).
    func testSigtermWithReadsInFlightSchedulesNothingOnAStoppedEventLoop() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try PreparedHistory.create(state: state, directory: directory)
        try PreparedHistory.fill(state: state, """
            first = int(now // 60) - 400 * 1440
            db.executemany("INSERT OR IGNORE INTO minute_bin (minute, steps, distance_m) VALUES (?, 40, 28.0)",
                           ((first + d * 1440 + 420 + m,) for d in range(400) for m in range(14 * 60)))
            rows = ((now - 86400 + i, 48.1 + (i % 600) * 1e-5, 11.5 + i * 1e-5, 520.0, 4.0, "3d", 9) for i in range(86400))
            db.executemany("INSERT INTO track_point VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            """)
        for round in 0..<3 {
            let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                                                "--state-dir", state], directory: directory,
                                    environment: ["SWIFTNIO_STRICT": "1"])
            let tenYears = Timestamp.string(Date().addingTimeInterval(-3650 * 86_400))
            var clients: [SocketClient] = []
            for i in 0..<48 {
                let client = try daemon.connect()
                let request: [String: Any] = i % 3 == 2
                    ? ["cmd": "track", "format": "gpx", "from": "2000-01-01T00:00:00Z"]
                    : ["cmd": "history", "bin": "day", "from": tenYears]
                let data = try JSONSerialization.data(withJSONObject: request)
                try client.sendLine(String(decoding: data, as: UTF8.self))
                clients.append(client)
            }
            let first = try clients[0].readObject()
            XCTAssertEqual(first["class"] as? String, "HISTORY", "\(first)")
            XCTAssertEqual(daemon.terminate(), 0, "round \(round): \(daemon.log)")
            XCTAssertFalse(daemon.log.contains("Cannot schedule tasks"), "round \(round): \(daemon.log)")
            XCTAssertTrue(daemon.log.contains(" saved to "), daemon.log)
        }
    }

    func testStepEventsKeepFlowingDuringThreeConcurrentExportsOfAnEightyThousandPointTrack() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        try PreparedHistory.create(state: state, directory: directory)
        // 80,000 fixes at 1 Hz ending now, walking east: restored at start as the path in memory.
        try PreparedHistory.fill(state: state, """
            rows = ((now - 80000 + i, 48.1 + (i % 600) * 1e-5, 11.5 + i * 1e-5, 520.0, 4.0, "3d", 9) for i in range(80000))
            db.executemany("INSERT INTO track_point VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            """)
        let daemon = try walking(state: state, directory: directory)
        let watcher = try SocketClient(path: daemon.socketPath, receiveTimeout: 30)
        _ = try watcher.request(["cmd": "watch", "classes": ["STEP"]])
        _ = try watcher.readObject()

        final class Exports: Sendable {
            struct Done {
                var finished: [(points: Int, bytes: Int)] = []
                var errors: [String] = []
            }
            let done = Locked(Done())
        }
        let exports = Exports()
        let group = DispatchGroup()
        let socketPath = daemon.socketPath
        for format in ["gpx", "geojson", "gpx"] {
            DispatchQueue.global().async(group: group) {
                do {
                    let line = try Self.reply(to: "{\"cmd\":\"track\",\"format\":\"\(format)\"}", at: socketPath)
                    let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] ?? [:]
                    let points = object["points"] as? Int ?? -1
                    exports.done.withLock { $0.finished.append((points, line.count)) }
                } catch {
                    exports.done.withLock { $0.errors.append("\(error)") }
                }
            }
        }
        // Steps arrive as the recording is walked (about 7 a second at 4x) while the documents are written.
        var arrivals: [Date] = [Date()]
        while group.wait(timeout: .now()) == .timedOut {
            let event = try watcher.readObject()
            if event["class"] as? String == "STEP" { arrivals.append(Date()) }
            XCTAssertLessThan(Date().timeIntervalSince(arrivals[0]), 300, "exports did not finish")
        }
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0.timeIntervalSince($1) }
        let longest = gaps.max() ?? .infinity
        print("3 exports of 80,000 points took \(String(format: "%.1f", Date().timeIntervalSince(arrivals[0]))) s; "
              + "\(arrivals.count - 1) STEP events meanwhile, longest gap \(String(format: "%.2f", longest)) s")
        XCTAssertEqual(exports.done.withLock { $0.errors }, [])
        XCTAssertEqual(exports.done.withLock { $0.finished.map(\.points) }, [80_000, 80_000, 80_000])
        XCTAssertGreaterThan(arrivals.count, 10)
        // An engine held by the exports would stall for the whole of them (tens of seconds); scheduling on a busy
        // machine may hold a step a second or two.
        XCTAssertLessThan(longest, 5, "STEP events stalled during the exports")
        XCTAssertEqual(daemon.terminate(), 0)
    }

    /// The first reply line to `request`, read in large chunks and scanned once (a 10 MB line).
    private static func reply(to request: String, at path: String) throws -> Data {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw NSError(domain: "StoreLoadTests", code: Int(errno)) }
        var tv = timeval(tv_sec: 300, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let line = Array((request + "\n").utf8)
        guard send(fd, line, line.count, Int32(MSG_NOSIGNAL)) == line.count else { throw NSError(domain: "StoreLoadTests", code: 1) }
        var received = Data()
        var lines = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw NSError(domain: "StoreLoadTests", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "closed"]) }
            let start = received.count
            received.append(contentsOf: chunk[0..<n])
            // The VERSION banner first, then the reply.
            var index = received.index(received.startIndex, offsetBy: start)
            while let newline = received[index...].firstIndex(of: 0x0A) {
                lines += 1
                if lines == 2 {
                    let begin = received[..<newline].lastIndex(of: 0x0A).map { $0 + 1 } ?? received.startIndex
                    return Data(received[begin..<newline])
                }
                index = newline + 1
            }
        }
    }
}
