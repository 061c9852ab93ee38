import Foundation
import StepProtocol
import XCTest

/// The daemon's exit statuses (sysexits.h) and the reasons it prints, against the real binary; and the one
/// table in docs/configuration.md and both man pages.
final class ExitStatusTests: XCTestCase {
    private func stepd(_ arguments: [String], in directory: TemporaryDirectory) throws -> CommandResult {
        try runCommand(Binaries.stepd, arguments + ["--socket", directory.file("s.sock"), "--state-dir", directory.file("state")],
                       timeout: 30)
    }

    private func assertFailure(_ result: CommandResult, _ status: ExitStatus, saying reason: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status.rawValue, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains(reason), "expected \"\(reason)\" in: \(result.stderr)", file: file, line: line)
        XCTAssertFalse(result.stderr.contains("Domain"), "a Foundation error leaked: \(result.stderr)", file: file, line: line)
    }

    func testAReplayThatCannotBeReadSaysWhy() throws {
        let directory = try TemporaryDirectory()
        assertFailure(try stepd(["--replay", directory.file("absent.csv.gz")], in: directory), .noInput, saying: "no such file")
        assertFailure(try stepd(["--replay", directory.path], in: directory), .noInput, saying: "is a directory")
        // gzip's magic bytes and then garbage: zlib reads nothing from it.
        let corrupt = directory.file("corrupt.csv.gz")
        try Data([0x1f, 0x8b, 0x08, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48]).write(to: URL(fileURLWithPath: corrupt))
        assertFailure(try stepd(["--replay", corrupt], in: directory), .dataError, saying: "not a valid gzip file")
        let rows = directory.file("rows.csv")
        try "t,x,y,z\n0,1,2\n".write(toFile: rows, atomically: true, encoding: .utf8)
        assertFailure(try stepd(["--replay", rows], in: directory), .dataError, saying: "rows.csv:2: expected four numbers")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("s.sock")), "it must stop before listening")
    }

    /// Runs stepd that may block at start (opening a FIFO): a stepd still running after 20 s is killed with
    /// SIGKILL (SIGTERM would not end it) and the test fails.
    private func stepdThatMustNotBlock(_ arguments: [String], in directory: TemporaryDirectory,
                                       file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.stepd)
        process.arguments = arguments + ["--socket", directory.file("s.sock"), "--state-dir", directory.file("state")]
        let errors = directory.file("stderr-\(UUID().uuidString.prefix(8))")
        XCTAssertTrue(FileManager.default.createFile(atPath: errors, contents: nil))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(10_000) }  // poll for the exit, not a fixed wait
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            XCTFail("stepd \(arguments) still runs after 20 s: blocked at start", file: file, line: line)
        }
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, stdout: "", stderr: try String(contentsOfFile: errors, encoding: .utf8))
    }

    /// A FIFO (or a device) named as a start-up file would hold the start in open(2), where neither SIGTERM nor
    /// SIGINT ends it: each is refused at once, before listening, with the reason and 66.
    func testAFIFOOrADeviceAsAStartUpFileIsRefusedAtOnce() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.file("fifo")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        assertFailure(try stepdThatMustNotBlock(["--replay", fifo], in: directory), .noInput,
                      saying: "cannot open recording \(fifo): it is a FIFO, not a regular file")
        assertFailure(try stepdThatMustNotBlock(["--replay", "/dev/zero"], in: directory), .noInput,
                      saying: "cannot open recording /dev/zero: it is a character device, not a regular file")
        assertFailure(try stepdThatMustNotBlock(["--config", fifo, "--replay", Binaries.bundledRecording], in: directory), .noInput,
                      saying: "\(fifo): cannot read the configuration: it is a FIFO, not a regular file")
        let mqtt = ["--replay", Binaries.bundledRecording, "--mqtt-url", "mqtts://127.0.0.1:1"]
        assertFailure(try stepdThatMustNotBlock(mqtt + ["--mqtt-ca-file", fifo], in: directory), .noInput,
                      saying: "--mqtt-ca-file \(fifo): it is a FIFO, not a regular file")
        assertFailure(try stepdThatMustNotBlock(mqtt + ["--mqtt-username", "u", "--mqtt-password-file", fifo], in: directory), .noInput,
                      saying: "cannot read the MQTT password file \(fifo): it is a FIFO, not a regular file")
        // A barometer's file beside the recording is opened at start too.
        let walk = directory.file("walk.csv.gz")
        try FileManager.default.copyItem(atPath: Binaries.bundledRecording, toPath: walk)
        XCTAssertEqual(mkfifo(directory.file("walk.pressure.csv"), 0o600), 0)
        assertFailure(try stepdThatMustNotBlock(["--replay", walk], in: directory), .noInput,
                      saying: "cannot read pressure file \(directory.file("walk.pressure.csv")): it is a FIFO, not a regular file")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("s.sock")), "it must stop before listening")
    }

    func testAConfigurationDirectoryIsNamedInWords() throws {
        let directory = try TemporaryDirectory()
        assertFailure(try stepd(["--config", directory.path], in: directory), .noInput,
                      saying: "\(directory.path): cannot read the configuration: is a directory")
    }

    func testASocketAnotherDaemonServesIsATemporaryFailure() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop"])
        let second = try runCommand(Binaries.stepd, ["--replay", Binaries.bundledRecording, "--socket", daemon.socketPath,
                                                     "--state-dir", daemon.socketPath + ".state"], timeout: 30)
        assertFailure(second, .tempFail, saying: "another daemon is already listening on \(daemon.socketPath)")
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS", "the first one serves on")
    }

    /// One range for the command line and the file, said in the same words.
    func testAValueOutOfRangeIsAUsageErrorInTheFilesWords() throws {
        let directory = try TemporaryDirectory()
        let flag = try stepd(["--height", "175"], in: directory)
        assertFailure(flag, .usage, saying: "expected a number from 0.5 to 2.5, found \"175\"")
        let config = directory.file("stepd.conf")
        try "speed = 2000\n".write(toFile: config, atomically: true, encoding: .utf8)
        assertFailure(try stepd(["--config", config], in: directory), .config, saying: "expected a number from 0.01 to 1000, found \"2000\"")
        assertFailure(try stepd(["--speed", "2000"], in: directory), .usage, saying: "expected a number from 0.01 to 1000, found \"2000\"")
    }

    /// Every status of ExitStatus is in the table of docs/configuration.md and in both man pages' EXIT STATUS.
    func testTheExitStatusTableIsDocumentedEverywhere() throws {
        let root = Binaries.repository
        let table = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let daemonPage = try String(contentsOf: root.appendingPathComponent("docs/man/stepd.8"), encoding: .utf8)
        let clientPage = try String(contentsOf: root.appendingPathComponent("docs/man/stepctl.1"), encoding: .utf8)
        func exitSection(_ page: String) -> String {
            guard let start = page.range(of: ".SH EXIT STATUS") else { return "" }
            let rest = page[start.upperBound...]
            return String(rest[..<(rest.range(of: "\n.SH ")?.lowerBound ?? rest.endIndex)])
        }
        let manSections = exitSection(daemonPage) + exitSection(clientPage)
        for status in ExitStatus.allCases {
            XCTAssertTrue(table.contains("\n| \(status.rawValue) | "), "configuration.md's table lacks \(status)")
            XCTAssertTrue(manSections.contains(".B \(status.rawValue)\n") || manSections.contains(" \(status.rawValue) "),
                          "the man pages' EXIT STATUS lack \(status)")
        }
        let unit = try String(contentsOf: root.appendingPathComponent("systemd/stepd.service"), encoding: .utf8)
        XCTAssertTrue(unit.contains("\nRestartPreventExitStatus=64 65 66 78\n"), "stepd.service restarts on a status it cannot fix")
    }
}
