import Foundation
import XCTest

/// libmosquitto is opened when MQTT is configured, not linked (docs/iio.md, "Memory"): a daemon that publishes
/// nothing neither maps it nor its TLS libraries, and runs on a system without it; one configured for MQTT
/// without it stops at start with a clear reason. The library is hidden in a private mount namespace (/dev/null
/// bound over it), so the real libmosquitto of the machine stays as it is.
final class MQTTLibraryTests: XCTestCase {
    /// Runs stepd with libmosquitto.so.1 unreadable (a file of no bytes, as the loader sees it); a daemon that
    /// serves is sent SIGTERM after `seconds`.
    private func runWithoutLibmosquitto(_ arguments: [String], seconds: Int = 20) throws -> CommandResult {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare for a private mount")
        }
        let library = try XCTUnwrap(["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]
            .map { "\($0)/libmosquitto.so.1" }.first { FileManager.default.fileExists(atPath: $0) },
            "libmosquitto1 is not installed (scripts/setup)")
        let real = URL(fileURLWithPath: library).resolvingSymlinksInPath().path
        return try runCommand("/usr/bin/unshare", ["-m", "--propagation", "private", "sh", "-c",
                                                   "mount --bind /dev/null \"$1\" && shift && exec \"$@\"", "sh", real,
                                                   "timeout", "--preserve-status", "-s", "TERM", "\(seconds)",
                                                   Binaries.stepd] + arguments, timeout: 60)
    }

    func testTheDaemonRunsWithoutLibmosquittoWhenMQTTIsNotConfigured() throws {
        let directory = try TemporaryDirectory()
        let version = try runWithoutLibmosquitto(["--version"])
        XCTAssertEqual(version.status, 0, "stepd needs libmosquitto to start: \(version.stderr)")
        // The daemon itself, 3 s on the bundled recording: it counts, serves, and stops cleanly on SIGTERM.
        let replay = try runWithoutLibmosquitto(["--replay", Binaries.bundledRecording, "--speed", "50", "--no-gps",
                                                 "--state-dir", directory.file("state"), "--socket", directory.file("s.sock")],
                                                seconds: 3)
        XCTAssertEqual(replay.status, 0, replay.stderr)
        XCTAssertTrue(replay.stdout.contains("stepd: stopped;"), replay.stdout + replay.stderr)
        XCTAssertFalse(replay.stderr.contains("mosquitto"), replay.stderr)
    }

    func testMQTTWithoutLibmosquittoStopsTheStartWithTheReason() throws {
        let directory = try TemporaryDirectory()
        // Port 1 on loopback: nothing is ever connected to; the start fails before any connection.
        let result = try runWithoutLibmosquitto(["--replay", Binaries.bundledRecording, "--no-gps",
                                                 "--state-dir", directory.file("state"), "--socket", directory.file("s.sock"),
                                                 "--mqtt-url", "mqtt://127.0.0.1:1"])
        XCTAssertEqual(result.status, 78, "exit status (EX_CONFIG, as the other MQTT settings): \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("cannot publish over MQTT: cannot load libmosquitto.so.1"), result.stderr)
    }
}
