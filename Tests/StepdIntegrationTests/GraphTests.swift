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
        let screen = try screen { $0.contains("vibration") && $0.contains("█") }
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

    /// The screen once `condition` holds on it, or as it is after 30 s, for the assertions that follow to show.
    /// Generous: under load stepctl redraws after a SIGWINCH late (5 s was not always enough).
    private func screen(until condition: (String) -> Bool) throws -> String {
        var screen = ""
        let deadline = Date().addingTimeInterval(30)
        repeat {
            screen = try tmux(["capture-pane", "-p", "-t", "graph"]).stdout
            if condition(screen) { break }
            usleep(100_000)  // poll interval of a wait for a state, not a fixed wait
        } while Date() < deadline
        return screen
    }

    /// A terminal made larger (SIGWINCH) gets a larger chart at once; a smaller one a smaller chart.
    func testGraphFollowsTerminalResizes() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else { throw XCTSkip("tmux not installed") }
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"])
        defer { _ = try? tmux(["kill-server"]) }
        XCTAssertEqual(try tmuxDetached(["new-session", "-d", "-s", "graph", "-x", "80", "-y", "24",
                                         "\(Binaries.stepctl) graph --socket \(daemon.socketPath); sleep 30"]), 0)
        func widest(_ screen: String) -> Int { screen.split(separator: "\n").map(\.count).max() ?? 0 }
        // The chart's last line ("Ctrl-C to quit") is the pane's last row but one (the last is left blank).
        func endsOnLastRow(_ screen: String) throws -> Bool {
            let rows = Int(try tmux(["display-message", "-p", "-t", "graph", "#{pane_height}"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            let lines = screen.split(separator: "\n", omittingEmptySubsequences: false)
            return rows > 20 && lines.count >= rows && lines[rows - 2].contains("Ctrl-C to quit")
        }
        let small = try screen { $0.contains("vibration") && $0.contains("█") }
        XCTAssertLessThanOrEqual(widest(small), 80, small)
        XCTAssertTrue(try endsOnLastRow(small), small)
        XCTAssertEqual(try tmux(["resize-window", "-t", "graph", "-x", "120", "-y", "40"]).status, 0)
        let large = try screen { widest($0) >= 119 && (try? endsOnLastRow($0)) == true }
        XCTAssertTrue((119...120).contains(widest(large)), "a chart as wide as 120 columns: \(large)")
        XCTAssertTrue(try endsOnLastRow(large), "a chart as tall as 40 rows: \(large)")
        XCTAssertEqual(try tmux(["resize-window", "-t", "graph", "-x", "90", "-y", "30"]).status, 0)
        let smaller = try screen { widest($0) <= 90 && (try? endsOnLastRow($0)) == true }
        XCTAssertTrue((89...90).contains(widest(smaller)), "a chart as wide as 90 columns: \(smaller)")
        XCTAssertTrue(try endsOnLastRow(smaller), "a chart as tall as 30 rows: \(smaller)")
    }

    /// A 60x15 terminal gets the whole chart (title, trace, gauge, readings, the Ctrl-C line) within it; one
    /// smaller than 40x15 gets a line saying the size needed, and the chart once it is enlarged.
    func testGraphFitsA60x15TerminalOrSaysItNeedsMoreRoom() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else { throw XCTSkip("tmux not installed") }
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"])
        defer { _ = try? tmux(["kill-server"]) }
        XCTAssertEqual(try tmuxDetached(["new-session", "-d", "-s", "graph", "-x", "60", "-y", "15",
                                         "\(Binaries.stepctl) graph --socket \(daemon.socketPath); sleep 30"]), 0)
        let small = try screen { $0.contains("vibration") && $0.contains("█") }
        let lines = small.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertLessThanOrEqual(lines.map(\.count).max() ?? 0, 60, small)
        XCTAssertTrue(lines.first?.hasPrefix(" stepd seismometer: vertical, ±4.0 m/s²") ?? false, "a whole title: \(small)")
        XCTAssertTrue(lines.prefix(15).contains { $0.hasPrefix(" Ctrl-C to quit") }, "the last line is on screen: \(small)")
        XCTAssertTrue(lines.prefix(15).contains { $0.hasPrefix(" vertical ") && $0.contains("vibration") }, small)
        XCTAssertEqual(try tmux(["resize-window", "-t", "graph", "-x", "30", "-y", "10"]).status, 0)
        let tiny = try screen { $0.contains("needs a terminal") }
        XCTAssertTrue(tiny.replacingOccurrences(of: "\n", with: "").contains("stepctl graph needs a terminal of at least 40x15;"), tiny)
        XCTAssertTrue(tiny.contains("this one is 30x10"), tiny)
        XCTAssertEqual(try tmux(["resize-window", "-t", "graph", "-x", "80", "-y", "24"]).status, 0)
        let back = try screen { $0.contains("full scale ±4.0") }
        XCTAssertTrue(back.contains("stepd seismometer: vertical acceleration, full scale ±4.0 m/s²"), back)
    }

    /// The daemon restarted under `stepctl graph`: the chart says it waits, then goes on with the new daemon.
    func testGraphWaitsForARestartedDaemon() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else { throw XCTSkip("tmux not installed") }
        let directory = try TemporaryDirectory()
        let arguments = ["--replay", Binaries.bundledRecording, "--loop", "--no-gps"]
        let first = try Daemon(arguments: arguments, directory: directory)
        defer { _ = try? tmux(["kill-server"]) }
        XCTAssertEqual(try tmuxDetached(["new-session", "-d", "-s", "graph", "-x", "80", "-y", "24",
                                         "\(Binaries.stepctl) graph --socket \(first.socketPath); sleep 30"]), 0)
        _ = try screen { $0.contains("█") }
        XCTAssertEqual(first.terminate(), 0)
        let waiting = try screen { $0.contains("waiting for it to come back") }
        XCTAssertTrue(waiting.contains("stepd went away; waiting for it to come back"), waiting)
        XCTAssertTrue(waiting.contains("stepd seismometer"), "still drawing: \(waiting)")
        let second = try Daemon(arguments: arguments, directory: directory)
        defer { second.terminate() }
        let back = try screen { !$0.contains("waiting for it to come back") }
        XCTAssertFalse(back.contains("waiting for it to come back"), back)
        XCTAssertTrue(back.contains("stepd seismometer"), back)
    }
}
