import Foundation
import XCTest

/// docs/web.md's way to take a screenshot of the live page, run as written there against a live daemon: the
/// command ends (the event stream would keep --virtual-time-budget from ever running out), and the page it
/// shot has the daemon's figures, not placeholders.
final class WebSnapshotTests: XCTestCase {
    /// The documented command: the line that starts `chromium --headless` and its continuation.
    private func documentedCommand() throws -> String {
        let doc = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/web.md"), encoding: .utf8)
        let lines = doc.components(separatedBy: "\n")
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("chromium --headless") }, "docs/web.md has no chromium command")
        var command = ""
        for line in lines[start...] {
            command += line.hasSuffix("\\") ? String(line.dropLast()) : line
            if !line.hasSuffix("\\") { break }
        }
        return command
    }

    func testTheDocumentedScreenshotCommandFinishesWithTheDaemonsFigures() throws {
        let chromium = try Chromium.requireBrowser()
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--speed", "4", "--no-gps"],
                                directory: directory)
        defer { daemon.terminate() }
        try daemon.waitForSteps("some steps") { ($0["steps"] as? Int ?? 0) > 0 }
        let web = try WebServer(socket: daemon.socketPath, directory: directory, extra: ["--tiles", "none"])
        defer { web.stop() }
        let picture = directory.file("dashboard.png")
        var command = try documentedCommand()
        XCTAssertTrue(command.contains("'http://127.0.0.1:8947/?static'"), command)
        command = command.replacingOccurrences(of: "http://127.0.0.1:8947/", with: web.url)
            .replacingOccurrences(of: "chromium ", with: "'\(chromium)' --user-data-dir='\(directory.file("profile"))' ")
        // timeout(1): a command that never ends is killed (124), so the test ends either way.
        let shot = try runCommand("/bin/sh", ["-c", "cd '\(directory.path)' && timeout 60 \(command)"], timeout: 90)
        XCTAssertEqual(shot.status, 0, shot.stderr)
        let png = try Data(contentsOf: URL(fileURLWithPath: picture))
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "a PNG")
        XCTAssertGreaterThan(png.count, 10_000)
        // The same page as the DOM Chromium drew (--dump-dom, as the doc says): the daemon's count and status.
        let dump = command.replacingOccurrences(of: "--screenshot=dashboard.png", with: "--dump-dom")
        let dom = try runCommand("/bin/sh", ["-c", "timeout 60 \(dump)"], timeout: 90)
        XCTAssertEqual(dom.status, 0, dom.stderr)
        let steps = try XCTUnwrap(dom.stdout.firstMatch(of: #/<span id="steps">([0-9,]+)</span>/#), dom.stdout)
        XCTAssertGreaterThan(Int(steps.output.1.replacingOccurrences(of: ",", with: "")) ?? 0, 0)
        XCTAssertTrue(dom.stdout.contains("replay running · GPS off"), dom.stdout)
    }
}
