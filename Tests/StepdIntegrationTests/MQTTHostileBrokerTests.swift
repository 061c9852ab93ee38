import Foundation
import XCTest

/// A hostile or intercepted broker on 127.0.0.1 (Python, plain MQTT): it accepts the daemon's CONNECT, answers
/// CONNACK, then sends a PUBLISH whose fixed header declares 268,435,455 bytes (the most MQTT can say) and streams
/// bytes after it. libmosquitto (2.0.11) does not bound what it takes from a broker: left to it, it buffers all
/// of it (551 MB for this packet). The relay drops the connection at the header, logs why, and the fleet
/// connects again after the back-off as after any drop (issue 39, point 4).
final class MQTTHostileBrokerTests: XCTestCase {
    private static let broker = """
        import json, socket, sys
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(sys.argv[1])))
        listener.listen(4)
        print(json.dumps({"listening": True}), flush=True)
        chunk = b"x" * 65536
        for connection in range(int(sys.argv[2])):
            s, _ = listener.accept()
            s.recv(4096)                       # CONNECT
            s.sendall(b"\\x20\\x02\\x00\\x00")       # CONNACK, accepted
            s.sendall(b"\\x30\\xff\\xff\\xff\\x7f")  # PUBLISH, remaining length 268,435,455
            sent = 0
            try:
                while sent < 300 * 1024 * 1024:
                    sent += s.send(chunk)
            except OSError:
                pass
            s.close()
            print(json.dumps({"connection": connection + 1, "sent": sent}), flush=True)
        """

    func testAPublishDeclaringTwoHundredSixtyEightMBDropsTheConnectionNotTheMemory() throws {
        let directory = try TemporaryDirectory()
        let port = GPSDFake.freePort()
        let fake = Process()
        let output = Pipe()
        fake.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        fake.arguments = ["python3", "-c", Self.broker, "\(port)", "2"]
        fake.standardOutput = output
        try fake.run()
        defer { if fake.isRunning { fake.terminate() } }
        let lines = LineReader(output.fileHandleForReading)
        XCTAssertEqual(try lines.next(timeout: 10), #"{"listening": true}"#)

        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps",
                                            "--mqtt-url", "mqtt://127.0.0.1:\(port)", "--mqtt-device-id", "hostile"],
                                directory: directory)
        defer { daemon.terminate() }
        let pid = daemon.process.processIdentifier
        let baseline = ProcStatus.residentBytes(of: pid)
        var peak = baseline
        var connections: [[String: Any]] = []
        // Two connections, each dropped by the daemon at the header: the second shows it connects again.
        while connections.count < 2 {
            let line = try lines.next(timeout: 60, while: { peak = max(peak, ProcStatus.residentBytes(of: pid)) })
            connections.append(try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
        peak = max(peak, ProcStatus.residentBytes(of: pid))
        let status = try daemon.connect().request(["cmd": "status"])
        print("hostile broker: \(connections); RSS \(baseline >> 20) MB before, peak \(peak >> 20) MB; mqtt \(status["mqtt"] ?? "?")")
        XCTAssertLessThan(peak - baseline, 30 << 20, "RSS rose from \(baseline >> 20) MB to \(peak >> 20) MB")
        for connection in connections {
            XCTAssertLessThan(connection["sent"] as? Int ?? .max, 100 << 20, "the daemon kept reading: \(connection)")
        }
        XCTAssertTrue(daemon.log.contains("of 268435455 bytes, more than the 65536 bytes a publisher accepts"), daemon.log)
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }
}

/// Lines from a pipe, waiting at most a timeout for each.
private final class LineReader {
    private let handle: FileHandle
    private var buffered = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next(timeout: TimeInterval, while waiting: () -> Void = {}) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
                buffered = Data(buffered[(newline + 1)...])
                return line
            }
            waiting()
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(handle.fileDescriptor, &chunk, chunk.count)
            guard n > 0 else { break }
            buffered.append(contentsOf: chunk[0..<n])
        }
        throw NSError(domain: "LineReader", code: 1, userInfo: [NSLocalizedDescriptionKey: "no line within \(timeout) s"])
    }
}
