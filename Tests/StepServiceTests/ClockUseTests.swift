import Foundation
import XCTest

/// Time is an input: only the production clock (Sources/Timekeeping) reads the wall or monotonic clock, sets a
/// dispatch timer or a timerfd, or sleeps. Everything else takes a `DaemonClock`, so that a test can move time by
/// hand. The few escapes are listed here with their reason (and in docs/architecture.md, "Time"); a new call
/// anywhere else fails this test.
final class ClockUseTests: XCTestCase {
    /// What reads or waits on a clock behind the daemon's back.
    private static let pattern = try! NSRegularExpression(pattern: [
        #"\bDate\(\)"#, #"\bDate\.now\b"#, #"Date\(timeIntervalSinceNow"#, #"\.timeIntervalSinceNow\b"#,
        #"\bDispatch(Wall)?Time\.now\(\)"#, #"[(\s]\.now\(\)"#, #"\basyncAfter\("#, #"\bmakeTimerSource\("#,
        #"\btimerfd_"#, #"\bclock_gettime\("#, #"\btime\((nil|&)"#, #"\bgettimeofday\("#, #"\bsystemUptime\b"#,
        #"\bCFAbsoluteTimeGetCurrent\("#, #"\busleep\("#, #"\bnanosleep\("#, #"\bThread\.sleep\("#, #"\bTask\.sleep\("#,
    ].joined(separator: "|"))

    /// File and the call it may make, with the reason.
    static let escapes: [(file: String, call: String, reason: String)] = [
        ("Sources/StepAcquisition/IIO/IIOBufferedSource.swift", "clock_gettime(",
         "reads the clock the kernel stamps the device's scans with (its current_timestamp_clock), to place them in time"),
        ("Sources/StepResearch/BenchCommand.swift", "clock_gettime(",
         "CLOCK_THREAD_CPUTIME_ID: the CPU time `stepd bench` reports, not a time the daemon acts on"),
    ]

    func testOnlyTheProductionClockReadsTime() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("Timekeeping/") }
        XCTAssertGreaterThan(files.count, 100, "the sources were found")
        var found: [String] = []
        var usedEscapes = Set<String>()
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                let range = NSRange(code.startIndex..., in: code)
                for match in Self.pattern.matches(in: code, range: range) {
                    let call = (code as NSString).substring(with: match.range).trimmingCharacters(in: .whitespaces.union(["("]))
                    let path = "Sources/" + file
                    if let escape = Self.escapes.first(where: { $0.file == path && $0.call.contains(call) }) {
                        usedEscapes.insert(escape.file + " " + escape.call)
                    } else {
                        found.append("\(path):\(number + 1): \(call)")
                    }
                }
            }
        }
        XCTAssertEqual(found, [], "time read outside Sources/Timekeeping: take a DaemonClock (docs/architecture.md, \"Time\")")
        let unused = Self.escapes.map { $0.file + " " + $0.call }.filter { !usedEscapes.contains($0) }
        XCTAssertEqual(unused, [], "an escape no longer needed: take it off the list and docs/architecture.md")
    }

    /// docs/architecture.md names every escape, so that the list a reader sees is the list the test keeps.
    func testTheArchitectureDocumentListsTheEscapes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let document = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        for file in Set(Self.escapes.map(\.file)) {
            XCTAssertTrue(document.contains(file.replacingOccurrences(of: "Sources/", with: "")), "docs/architecture.md does not name \(file)")
        }
    }
}
