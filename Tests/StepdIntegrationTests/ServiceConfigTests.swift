import Foundation
import XCTest

/// stepd.conf as the daemon reads it: values apply, flags override, a bad file exits 78 naming file:line:key
/// (66 for a file that cannot be read).
final class ServiceConfigTests: XCTestCase {
    func testBadFileExitsWithConfigErrorNamingFileLineAndKey() throws {
        let directory = try TemporaryDirectory()
        let config = directory.file("stepd.conf")
        try "# test\nretention_days = 30\nheight = 175\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try runCommand(Binaries.stepd, ["--config", config, "--socket", directory.file("s.sock"),
                                                     "--state-dir", directory.file("state")], timeout: 30)
        XCTAssertEqual(result.status, 78)
        XCTAssertEqual(result.stderr, "stepd: \(config):3: key \"height\": expected a number from 0.5 to 2.5, found \"175\"\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file("s.sock")), "it must stop before listening")

        let missing = try runCommand(Binaries.stepd, ["--config", directory.file("absent.conf")], timeout: 30)
        XCTAssertEqual(missing.status, 66, "EX_NOINPUT")
        XCTAssertTrue(missing.stderr.contains("absent.conf: cannot read the configuration"), missing.stderr)
    }

    func testFileValuesApplyAndFlagsWin() throws {
        let directory = try TemporaryDirectory()
        let config = directory.file("stepd.conf")
        try """
            detector = threshold
            retention_days = 12
            replay = \(Binaries.bundledRecording)
            loop = true
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let fromFile = try Daemon(arguments: ["--config", config], directory: directory, socketName: "a.sock")
        let status = try fromFile.connect().request(["cmd": "status"])
        XCTAssertEqual(status["detector"] as? String, "threshold")
        XCTAssertEqual((status["store"] as? [String: Any])?["retention_days"] as? Int, 12)
        XCTAssertEqual((status["source"] as? [String: Any])?["kind"] as? String, "replay")
        fromFile.terminate()

        let overridden = try Daemon(arguments: ["--config", config, "--detector", "peak", "--retention-days", "3"],
                                    directory: directory, socketName: "b.sock")
        let again = try overridden.connect().request(["cmd": "status"])
        XCTAssertEqual(again["detector"] as? String, "peak")
        XCTAssertEqual((again["store"] as? [String: Any])?["retention_days"] as? Int, 3)
        overridden.terminate()
    }
}
