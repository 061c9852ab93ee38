import Foundation
import XCTest

/// A gpsd with nothing to send (no receiver attached, or one that went quiet) leaves the gpsd source's thread
/// asleep: its read waits long, and a stop ends the wait by shutting the socket down (issue 29). A wait of
/// 0.5 s, for a stop to be noticed, would cost two wake-ups a second for nothing.
final class GPSDQuietTests: XCTestCase {
    func testAQuietGpsdCostsNoWakeUpsAndTheStopIsPrompt() throws {
        // A gpsd without a receiver: it greets with VERSION as gpsd does, and then nothing comes.
        let listener = try AcceptingListener(greeting: #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"# + "\n")
        defer { listener.stop() }
        let port = listener.port

        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--gpsd", "127.0.0.1:\(port)",
                                            "--log-level", "debug"])
        let pid = daemon.process.processIdentifier
        try pollUntil("the daemon to connect to 127.0.0.1:\(port)", timeout: 15, every: 0.1, detail: "log:\n\(daemon.log)") {
            daemon.log.contains("gpsd: connected to 127.0.0.1:\(port)")
        }
        let thread = try XCTUnwrap(Self.thread(named: "stepd.gpsd", of: pid), "no thread named stepd.gpsd")
        // The connection's first exchange (WATCH sent, nothing comes back): done once the thread has gone quiet.
        try pollUntil("the gpsd thread to go quiet", timeout: 20, every: 0.5) {
            let first = try XCTUnwrap(Self.voluntarySwitches(pid: pid, tid: thread))
            usleep(500_000)  // the window in which the thread must not wake, not a wait for an event
            return try XCTUnwrap(Self.voluntarySwitches(pid: pid, tid: thread)) == first
        }
        let before = try XCTUnwrap(Self.voluntarySwitches(pid: pid, tid: thread))
        // The behaviour is the absence of wake-ups over real time: 6 s watched, not a wait for an event.
        Thread.sleep(forTimeInterval: 6)
        let after = try XCTUnwrap(Self.voluntarySwitches(pid: pid, tid: thread))
        // A 0.5 s wait woke the thread 12 times in 6 s; the long wait, not at all (one for slack).
        XCTAssertLessThanOrEqual(after - before, 1, "the gpsd thread woke \(after - before) times in 6 s with nothing to read")

        let stopStarted = Date()
        XCTAssertEqual(daemon.terminate(), 0)
        // SourceThread gives a thread 3 s and then says it did not stop: the shutdown ends the wait well before.
        XCTAssertLessThan(Date().timeIntervalSince(stopStarted), 2.5, "the stop waited for the gpsd read")
        XCTAssertFalse(daemon.log.contains("did not stop"), "log:\n\(daemon.log)")
    }

    static func thread(named name: String, of pid: Int32) -> Int32? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap(Int32.init).first { tid in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    static func voluntarySwitches(pid: Int32, tid: Int32) -> Int? {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
    }
}
