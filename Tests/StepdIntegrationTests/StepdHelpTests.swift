import Foundation
import XCTest

/// Where a new user looks first: `stepd --help`, and the stepctl line `make run` prints.
final class StepdHelpTests: XCTestCase {
    /// `stepd --help` shows the options of the daemon itself (`stepd` is `stepd run`), not only the subcommands.
    func testTopLevelHelpShowsTheDaemonsOptions() throws {
        let help = try runCommand(Binaries.stepd, ["--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        let run = try runCommand(Binaries.stepd, ["help", "run"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let flags = Set(run.stdout.matches(of: #/--[a-z][a-z0-9-]+/#).map { String($0.output) })
        XCTAssertGreaterThan(flags.count, 30, run.stdout)
        let shown = Set(help.stdout.matches(of: #/--[a-z][a-z0-9-]+/#).map { String($0.output) })
        XCTAssertEqual(flags.subtracting(shown), [], "options of `stepd help run` missing from `stepd --help`")
        XCTAssertTrue(help.stdout.hasPrefix("OVERVIEW: Counts steps"), help.stdout)
        XCTAssertTrue(help.stdout.contains("USAGE: stepd [run] "), help.stdout)
        XCTAssertTrue(help.stdout.contains("SUBCOMMANDS:") && help.stdout.contains("analyze"), help.stdout)
        XCTAssertEqual(try runCommand(Binaries.stepd, ["-h"]).stdout, help.stdout)
    }

    /// `make run`'s "try" line runs as printed from the checkout, where stepctl is not on PATH.
    func testMakeRunPrintsAStepctlThatWorksFromTheCheckout() throws {
        let config = Binaries.productsDirectory.lastPathComponent
        let repository = Binaries.repository.path
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/make"),
              FileManager.default.isExecutableFile(atPath: "\(repository)/.build/\(config)/stepd") else {
            throw XCTSkip("make, or the checkout's .build/\(config)/stepd, is not there")
        }
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        // -o: setup and build count as done (the test runs on built binaries).
        let make = try RunningCommand("/bin/sh", ["-c", "cd '\(repository)' && exec make -s -o setup -o build run CONFIG=\(config) "
                                                  + "ARGS='--socket \(socket) --no-gps'"])
        defer {
            if let pid = try? runCommand("/usr/bin/pgrep", ["-f", "^\\.build/\(config)/stepd --demo --socket \(socket)"]).stdout
                .split(separator: "\n").first.flatMap({ pid_t($0) }) {
                kill(pid, SIGTERM)
            }
            make.stop()
        }
        var tryLine = ""
        for _ in 0..<20 where tryLine.isEmpty {
            guard let line = try make.lines(1, timeout: 30).first else { break }
            if let range = line.range(of: "try   ") { tryLine = String(line[range.upperBound...]) }
        }
        XCTAssertEqual(tryLine, ".build/\(config)/stepctl --socket \(socket) steps")
        let result = try runCommand("/bin/sh", ["-c", "cd '\(repository)' && \(tryLine)"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("steps since"), result.stdout)
    }
}
