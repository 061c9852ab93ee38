import Foundation
import XCTest

/// A hostile or intercepted broker on 127.0.0.1 (Python; plain MQTT, or TLS with a certificate from a CA made
/// by the test): it accepts the daemon's CONNECT, answers CONNACK, then sends a PUBLISH whose fixed header declares
/// 268,435,455 bytes (the most MQTT can say) and streams bytes after it. libmosquitto (2.0.11) does not bound what
/// it takes from a broker: left to it, it buffers all of it (551 MB for this packet). The relay drops the
/// connection at the header, logs why, and the fleet connects again after the back-off as after any drop (issue 39,
/// point 4); over mqtts:// too, where the relay is the TLS client.
final class MQTTHostileBrokerTests: XCTestCase {
    /// Arguments: the port, the connections to serve, and for TLS the certificate and key files.
    private static let broker = """
        import json, socket, ssl, sys
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(sys.argv[1])))
        listener.listen(4)
        tls = None
        if len(sys.argv) > 3:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(sys.argv[3], sys.argv[4])
        print(json.dumps({"listening": True}), flush=True)
        chunk = b"x" * 65536
        for connection in range(int(sys.argv[2])):
            s, _ = listener.accept()
            if tls:
                s = tls.wrap_socket(s, server_side=True)
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
        try checkHugePublishIsDropped(tls: false)
    }

    /// The same broker behind TLS (mqtts://, its certificate for 127.0.0.1 from a CA the daemon is given): before,
    /// libmosquitto did TLS itself, no byte passed the guard, and the PUBLISH was buffered whole.
    func testATLSBrokerPublishDeclaringTwoHundredSixtyEightMBDropsTheConnectionNotTheMemory() throws {
        try checkHugePublishIsDropped(tls: true)
    }

    private func checkHugePublishIsDropped(tls: Bool) throws {
        let directory = try TemporaryDirectory()
        var brokerArguments: [String] = []
        var daemonArguments = ["--mqtt-url", "mqtt://127.0.0.1:PORT"]
        if tls {
            try makeTestCertificates(in: directory, signed: [("server", "/CN=127.0.0.1", "IP:127.0.0.1")])
            brokerArguments = [directory.file("server.crt"), directory.file("server.key")]
            daemonArguments = ["--mqtt-url", "mqtts://127.0.0.1:PORT", "--mqtt-ca-file", directory.file("ca.crt")]
        }
        let port = GPSDFake.freePort()
        let fake = Process()
        let output = Pipe()
        fake.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        fake.arguments = ["python3", "-c", Self.broker, "\(port)", "2"] + brokerArguments
        fake.standardOutput = output
        try fake.run()
        defer { if fake.isRunning { fake.terminate() } }
        let lines = LineReader(output.fileHandleForReading)
        XCTAssertEqual(try lines.next(timeout: 10), #"{"listening": true}"#)

        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps", "--mqtt-device-id", "hostile"]
                                    + daemonArguments.map { $0.replacingOccurrences(of: "PORT", with: "\(port)") },
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
        print("hostile broker (\(tls ? "TLS" : "plain")): \(connections); RSS \(baseline >> 20) MB before, peak \(peak >> 20) MB; mqtt \(status["mqtt"] ?? "?")")
        XCTAssertLessThan(peak - baseline, 30 << 20, "RSS rose from \(baseline >> 20) MB to \(peak >> 20) MB")
        for connection in connections {
            XCTAssertLessThan(connection["sent"] as? Int ?? .max, 100 << 20, "the daemon kept reading: \(connection)")
        }
        try waitForLog("of 268435455 bytes, more than the 65536 bytes a publisher accepts", in: { daemon.log })
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
    }

    /// A real Mosquitto broker with TLS on 127.0.0.1: through the relay, a daemon given the test CA connects and
    /// publishes; one given another CA, and one whose broker's certificate is made out to another name, are
    /// refused with what failed, and keep running and retrying (the back-off). Before, libmosquitto said "A TLS
    /// error occurred" for both.
    func testAnMQTTSBrokerIsReachedAndAWrongCAOrHostNameIsRefusedWithTheReason() throws {
        let directory = try TemporaryDirectory()
        try makeTestCertificates(in: directory, signed: [("server", "/CN=127.0.0.1", "IP:127.0.0.1"),
                                                         ("elsewhere", "/CN=broker.invalid", "DNS:broker.invalid")])
        try makeTestCertificates(in: directory, authority: "other-ca", signed: [])
        let misnamedPort = GPSDFake.freePort()
        let broker = try MosquittoBroker(directory: directory, listener: [
            "cafile \(directory.file("ca.crt"))", "certfile \(directory.file("server.crt"))", "keyfile \(directory.file("server.key"))",
            "listener \(misnamedPort) 127.0.0.1",
            "cafile \(directory.file("ca.crt"))", "certfile \(directory.file("elsewhere.crt"))", "keyfile \(directory.file("elsewhere.key"))",
        ])
        func daemon(_ name: String, port: Int, caFile: String) throws -> Daemon {
            try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps", "--mqtt-device-id", name,
                                   "--mqtt-url", "mqtts://127.0.0.1:\(port)", "--mqtt-ca-file", caFile,
                                   "--state-dir", directory.file("state-\(name)")],
                       directory: directory, socketName: "\(name).sock")
        }
        let trusted = try daemon("trusted", port: broker.port, caFile: directory.file("ca.crt"))
        defer { trusted.terminate() }
        let untrusted = try daemon("untrusted", port: broker.port, caFile: directory.file("other-ca.crt"))
        defer { untrusted.terminate() }
        let misnamed = try daemon("misnamed", port: misnamedPort, caFile: directory.file("ca.crt"))
        defer { misnamed.terminate() }

        try trusted.waitUntil(timeout: 20, "mqtt.state connected") { ($0["mqtt"] as? [String: Any])?["state"] as? String == "connected" }
        var retained: [String: String] = [:]
        try pollUntil("the retained status and steps over mqtts://", timeout: 20, detail: "\(retained)") {
            retained = try retainedMessages(broker: broker, topics: ["stepd/trusted/#"], arguments: ["--cafile", directory.file("ca.crt")])
            return retained["stepd/trusted/status"] == "online" && retained["stepd/trusted/steps"]?.contains("\"class\":\"STEPS\"") == true
        }

        // What OpenSSL found wrong with the chain goes between the two ("self-signed certificate in certificate
        // chain", "unable to get local issuer certificate": it depends on what the broker sends).
        let notTrusted = ("the broker's certificate is not trusted: ",
                          " (checked against the certificate authority in \(directory.file("other-ca.crt")))")
        let notMadeOut = ("the broker's certificate is not made out to 127.0.0.1 (IP address mismatch)", "")
        for (refused, (start, end)) in [(untrusted, notTrusted), (misnamed, notMadeOut)] {
            // Two attempts with the same reason: it keeps trying, with the back-off, and keeps answering.
            var errors: Set<String> = []
            try refused.waitUntil(timeout: 30, "two refused attempts") { status in
                let mqtt = status["mqtt"] as? [String: Any]
                XCTAssertEqual(mqtt?["state"] as? String, "connecting")
                if let error = mqtt?["error"] as? String { errors.insert(error) }
                return errors.filter { $0.hasPrefix(start) && $0.contains(end + ", next try in ") }.count >= 2
            }
            try waitForLog("warning stepd.mqtt: mqtt: mqtts://127.0.0.1:", in: { refused.log })
            try waitForLog(start, in: { refused.log })
        }
        XCTAssertFalse(broker.log.contains("as stepd-untrusted"), String(broker.log.suffix(3000)))
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
