import Foundation
import Locking
import StepProcessing
import TestSupport
import XCTest

/// Random and mutated requests against the live daemon: it must answer, stay up, and not grow. The same lines
/// go through the server's own handler in process, each answer checked (StepServiceTests'
/// RequestFuzzTests); here the real daemon, its engine and store, take enough of them for a leak to show.
final class FuzzTests: XCTestCase {
    private func residentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    /// Sends `count` lines on `connections` connections at once, each followed by a marker it waits for.
    private func blast(_ daemon: Daemon, count: Int, connections: Int, seed: UInt64) throws {
        let group = DispatchGroup()
        let failures = Locked<[String]>([])
        let path = daemon.socketPath
        for c in 0..<connections {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                do {
                    let client = try SocketClient(path: path, receiveTimeout: 60)
                    var g = SplitMix(seed: seed &+ UInt64(c))
                    let lines = (0..<(count / connections)).map { _ in HostileRequestLines.next(&g) }
                    let writer = Thread {
                        for chunk in stride(from: 0, to: lines.count, by: 100) {
                            let text = lines[chunk..<min(chunk + 100, lines.count)].joined(separator: "\n") + "\n"
                            try? client.sendRaw(Data(text.utf8))
                        }
                        try? client.sendLine(#"{"cmd":"watch","enable":false}"#)
                        try? client.sendLine(#"{"cmd":"status","id":"fuzz-end"}"#)
                    }
                    writer.start()
                    while true {
                        let line = try client.readLine()
                        if line.contains("\"fuzz-end\"") { break }
                    }
                } catch {
                    failures.withLock { $0.append("connection \(c): \(error)") }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success, "the daemon answered every connection's marker")
        XCTAssertEqual(failures.value, [])
    }

    func testThirtyThousandHostileRequestsLeaveTheDaemonUpAndFlat() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--speed", "2"])
        defer { if !daemon.process.isRunning { print("daemon log:\n" + daemon.log.suffix(4000)) } }
        try blast(daemon, count: 8_000, connections: 4, seed: 1)  // warm-up: allocator pools, caches
        let before = try residentKiB(daemon.process.processIdentifier)
        try blast(daemon, count: 30_000, connections: 4, seed: 2)
        let after = try residentKiB(daemon.process.processIdentifier)
        let status = try daemon.connect().request(["cmd": "status"])
        XCTAssertEqual(status["class"] as? String, "STATUS")
        XCTAssertTrue(daemon.process.isRunning)
        print("fuzz: RSS \(before) KiB before, \(after) KiB after 30,000 requests")
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
    }
}
