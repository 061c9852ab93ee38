import Foundation
import XCTest

/// What a local user can do to a running daemon from outside its socket: signals, a second daemon at its path.
extension DaemonLifecycleTests {
    /// A daemon that stops removes the socket at its path only while it is the one it bound. Before, the first
    /// daemon's stop unlinked the socket a second daemon had bound there after the first one's was removed, and
    /// the second one, still running, could no longer be reached.
    func testAStoppingDaemonLeavesTheSocketAnotherDaemonBoundAtItsPath() throws {
        let dir = try TemporaryDirectory()
        let first = try Daemon(arguments: ["--replay", Binaries.bundledRecording], directory: dir)
        XCTAssertEqual(unlink(first.socketPath), 0)
        let second = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--state-dir", dir.file("state2")],
                                directory: dir)
        XCTAssertEqual(first.terminate(), 0, first.log)
        XCTAssert(FileManager.default.fileExists(atPath: second.socketPath), first.log)
        XCTAssertEqual(try second.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
        XCTAssertEqual(second.terminate(), 0, second.log)
        XCTAssertFalse(FileManager.default.fileExists(atPath: second.socketPath), "its own socket is still removed")
    }

    /// Every signal whose default action ends a process, other than a crash's, SIGQUIT and SIGKILL, either
    /// stops the daemon with its final save or is ignored. Before, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGSYS,
    /// SIGXCPU, SIGPWR and the real-time signals each killed it without the save.
    func testEveryOtherTerminatingSignalIsIgnoredOrStopsWithTheSave() throws {
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"])
        _ = try daemon.waitForSteps("steps") { ($0["steps"] as? Int ?? 0) > 0 }
        let rtmin = __libc_current_sigrtmin(), rtmax = __libc_current_sigrtmax()
        let ignored: [(Int32, String)] = [(SIGALRM, "SIGALRM"), (SIGVTALRM, "SIGVTALRM"), (SIGIO, "SIGIO"),
                                          (SIGSYS, "SIGSYS"), (SIGSTKFLT, "SIGSTKFLT"), (SIGXFSZ, "SIGXFSZ"),
                                          (rtmin, "SIGRTMIN"), (rtmin + 3, "SIGRTMIN+3"), (rtmax, "SIGRTMIN+\(rtmax - rtmin)")]
        kill(daemon.process.processIdentifier, SIGPROF)
        for (signal, _) in ignored { kill(daemon.process.processIdentifier, signal) }
        for (signal, name) in ignored {
            try pollUntil("\(name) to be logged", timeout: 20, every: 0.1, detail: daemon.log) {
                guard daemon.process.isRunning else { throw ProcessExited(what: "stepd", log: daemon.log) }
                return daemon.log.contains("signal \(signal) (\(name)) ignored")
            }
        }
        XCTAssertTrue(daemon.process.isRunning, daemon.log)
        XCTAssertEqual(try daemon.connect().request(["cmd": "status"])["class"] as? String, "STATUS")
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)

        for (signal, name) in [(SIGXCPU, "SIGXCPU"), (SIGPWR, "SIGPWR")] {
            let stopped = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop"])
            _ = try stopped.waitForSteps("steps") { ($0["steps"] as? Int ?? 0) > 0 }
            XCTAssertEqual(stopped.terminate(signal: signal), 0, stopped.log)
            XCTAssert(stopped.log.contains("(\(name)): shutting down"), stopped.log)
            XCTAssert(stopped.log.contains(" saved to "), stopped.log)
            XCTAssertFalse(FileManager.default.fileExists(atPath: stopped.socketPath))
        }
    }
}
