import Foundation
import XCTest

/// `stepctl graph` in a real terminal (tmux), read back with capture-pane.
final class GraphTests: XCTestCase {
    private let socketName = "stepd-graph-\(getpid())"

    private func tmux(_ arguments: [String]) throws -> CommandResult {
        try runCommand("/usr/bin/tmux", ["-L", socketName] + arguments)
    }

    /// Starting the session forks tmux's server, which keeps running and would hold captured pipes open, and
    /// which Foundation's Process waits on badly: spawn and reap it by hand, output to /dev/null.
    private func tmuxDetached(_ arguments: [String]) throws -> Int32 {
        let argv = ["/usr/bin/tmux", "-L", socketName] + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ) == 0 else { return -1 }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return status
    }

    func testGraphDrawsTheChartAndGaugeIn80x24AndQuitsOnCtrlC() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else { throw XCTSkip("tmux not installed") }
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop"])
        defer { _ = try? tmux(["kill-server"]) }
        let start = try tmuxDetached(["new-session", "-d", "-s", "graph", "-x", "80", "-y", "24",
                              "\(Binaries.stepctl) graph --sensitivity 4 --socket \(daemon.socketPath); sleep 30"])
        XCTAssertEqual(start, 0)
        var screen = ""
        for _ in 0..<50 {
            usleep(200_000)
            screen = try tmux(["capture-pane", "-p", "-t", "graph"]).stdout
            if screen.contains("vibration") && screen.contains("█") { break }
        }
        print(screen)
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssert(screen.contains("stepd seismometer"), screen)
        XCTAssert(screen.contains("full scale ±4.0"), screen)
        XCTAssert(screen.contains("█"), "the chart has a trace")
        XCTAssert(screen.contains("◆") && screen.contains("●"), "the gauge has its needle")
        XCTAssert(screen.contains("vertical") && screen.contains("pitch"), screen)
        XCTAssertLessThanOrEqual(lines.map(\.count).max() ?? 0, 80, "fits 80 columns")
        // Ctrl-C leaves the alternate screen and ends stepctl; the shell then runs `sleep`.
        XCTAssertEqual(try tmux(["send-keys", "-t", "graph", "C-c"]).status, 0)
        try pollUntil("stepctl graph to end after Ctrl-C", timeout: 10, every: 0.1) {
            try runCommand("/usr/bin/pgrep", ["-f", "^\(Binaries.stepctl) graph --sensitivity 4 --socket \(daemon.socketPath)"]).status != 0
        }
        let after = try tmux(["capture-pane", "-p", "-t", "graph"]).stdout
        XCTAssertFalse(after.contains("stepd seismometer"), "the screen is restored")
    }
}
