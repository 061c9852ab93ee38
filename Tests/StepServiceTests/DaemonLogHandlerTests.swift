import Foundation
import Logging
import NIOConcurrencyHelpers
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import XCTest

/// The daemon's log lines: `<N>` syslog priorities without a timestamp for the journal, a local
/// timestamp and the level on a terminal.
final class DaemonLogHandlerTests: XCTestCase {
    private let date = Date(timeIntervalSince1970: 1_764_000_000.25)

    func testJournalLinesCarryTheSyslogPriorityAndNoTimestamp() {
        let line = DaemonLogHandler.format(level: .notice, label: "stepd.store", message: "store is writable again",
                                           metadata: [:], style: .journal, date: date)
        XCTAssertEqual(line, "<5>stepd.store: store is writable again\n")
        XCTAssertEqual([Logger.Level.trace, .debug, .info, .notice, .warning, .error, .critical].map(DaemonLogHandler.syslogPriority),
                       [7, 7, 6, 5, 4, 3, 2])
    }

    func testTerminalLinesCarryALocalTimestampAndTheLevel() throws {
        let line = DaemonLogHandler.format(level: .debug, label: "stepd", message: "source: replay", metadata: ["n": "3"],
                                           style: .terminal, date: date)
        let pattern = try NSRegularExpression(pattern: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.250 debug stepd: source: replay n=3\n$"#)
        XCTAssertNotNil(pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), line)
    }

    func testAMessageWithANewlineStaysOneJournalEntry() {
        let line = DaemonLogHandler.format(level: .error, label: "stepd", message: "a\nb", metadata: [:], style: .journal, date: date)
        XCTAssertEqual(line, "<3>stepd: a b\n")
    }

    /// $JOURNAL_STREAM counts only when it names the descriptor's own device and inode (systemd.exec(5)).
    func testTheJournalIsDetectedByTheStreamsDeviceAndInode() throws {
        let path = NSTemporaryDirectory() + "stepd-log-\(UUID().uuidString.prefix(8))"
        XCTAssert(FileManager.default.createFile(atPath: path, contents: nil))
        defer { unlink(path) }
        let descriptor = open(path, O_WRONLY)
        defer { close(descriptor) }
        var info = stat()
        XCTAssertEqual(fstat(descriptor, &info), 0)
        let own = "\(info.st_dev):\(info.st_ino)"
        XCTAssertEqual(DaemonLogHandler.Style.detect(environment: ["JOURNAL_STREAM": own], descriptor: descriptor), .journal)
        XCTAssertEqual(DaemonLogHandler.Style.detect(environment: ["JOURNAL_STREAM": "1:2"], descriptor: descriptor), .terminal)
        XCTAssertEqual(DaemonLogHandler.Style.detect(environment: [:], descriptor: descriptor), .terminal)
        XCTAssertEqual(DaemonLogHandler.Style.detect(environment: ["INVOCATION_ID": "x"], descriptor: descriptor), .journal,
                       "under systemd, a stderr that is not a terminal goes to a log collector")
    }

    func testLevelsBelowTheThresholdAreNotWritten() {
        let lines = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "t") {
            DaemonLogHandler(label: $0, level: .notice, style: .journal) { line in lines.withLockedValue { $0.append(line) } }
        }
        logger.info("quiet")
        logger.notice("said")
        logger.logLevel = .debug
        logger.debug("now said")
        XCTAssertEqual(lines.withLockedValue { $0 }, ["<5>t: said\n", "<7>t: now said\n"])
    }
}
