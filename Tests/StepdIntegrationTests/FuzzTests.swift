import Foundation
import Locking
import TestSupport
import XCTest

/// Random and mutated requests against the live daemon: it must answer, stay up, and not grow.
final class FuzzTests: XCTestCase {
    private static let seeds: [String] = [
        #"{"cmd":"status"}"#, #"{"cmd":"steps","id":1}"#, #"{"cmd":"reset","id":"x"}"#,
        #"{"cmd":"watch","enable":true,"classes":["STEP","MOTION"],"rate_hz":30}"#,
        #"{"cmd":"watch","enable":false}"#, #"{"cmd":"position"}"#, #"{"cmd":"track","format":"gpx"}"#,
        #"{"cmd":"history","from":"2026-01-01T00:00:00Z","to":"2026-12-31T00:00:00Z","bin":"day"}"#,
        #"{"cmd":"visits","id":[1,{"a":null}]}"#,
    ]

    private static let fragments: [String] = [
        "{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e999", "-0", "\\u0000", "\\ud800", "é", "💥",
        "\"cmd\"", "\"watch\"", "\"classes\"", "\"rate_hz\"", "NaN", "0x10", "\t", "\\", "9999999999999999999999",
    ]

    private static func mutate(_ line: String, _ g: inout SplitMix) -> String {
        var bytes = Array(line.utf8)
        for _ in 0..<(1 + Int(g.next() % 4)) {
            switch g.next() % 6 {
            case 0 where !bytes.isEmpty: bytes[Int(g.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: g.next())
            case 1: bytes.insert(contentsOf: Array(Self.fragments[Int(g.next() % UInt64(Self.fragments.count))].utf8),
                                 at: Int(g.next() % UInt64(bytes.count + 1)))
            case 2 where !bytes.isEmpty: bytes.remove(at: Int(g.next() % UInt64(bytes.count)))
            case 3 where !bytes.isEmpty: bytes = Array(bytes.prefix(Int(g.next() % UInt64(bytes.count))))
            case 4: bytes += Array(Self.seeds[Int(g.next() % UInt64(Self.seeds.count))].utf8)
            default: bytes.append(UInt8(truncatingIfNeeded: g.next()))
            }
        }
        return String(decoding: bytes.filter { $0 != 0x0A }, as: UTF8.self)
    }

    private static func randomLine(_ g: inout SplitMix) -> String {
        switch g.next() % 10 {
        case 0: return String(decoding: (0..<Int(g.next() % 200)).map { _ in UInt8(truncatingIfNeeded: g.next()) }.filter { $0 != 0x0A }, as: UTF8.self)
        case 1: return String(repeating: "[", count: Int(g.next() % 3000))
        case 2: return String(repeating: "x", count: 4000 + Int(g.next() % 8000))
        case 3: return Self.seeds[Int(g.next() % UInt64(Self.seeds.count))]
        default: return Self.mutate(Self.seeds[Int(g.next() % UInt64(Self.seeds.count))], &g)
        }
    }

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
                    let lines = (0..<(count / connections)).map { _ in Self.randomLine(&g) }
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

    func testHundredThousandHostileRequestsLeaveTheDaemonUpAndFlat() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--speed", "2"])
        defer { if !daemon.process.isRunning { print("daemon log:\n" + daemon.log.suffix(4000)) } }
        try blast(daemon, count: 8_000, connections: 4, seed: 1)  // warm-up: allocator pools, caches
        let before = try residentKiB(daemon.process.processIdentifier)
        try blast(daemon, count: 100_000, connections: 4, seed: 2)
        let after = try residentKiB(daemon.process.processIdentifier)
        let status = try daemon.connect().request(["cmd": "status"])
        XCTAssertEqual(status["class"] as? String, "STATUS")
        XCTAssertTrue(daemon.process.isRunning)
        print("fuzz: RSS \(before) KiB before, \(after) KiB after 100,000 requests")
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
    }
}
