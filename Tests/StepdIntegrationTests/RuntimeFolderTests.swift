import Foundation
import XCTest

/// The per-user socket folders ($XDG_RUNTIME_DIR/stepd, /tmp/stepd-UID) are used only when they are the
/// user's own, as ssh-agent and tmux want theirs: by the daemon, and by stepctl looking for it.
final class RuntimeFolderTests: XCTestCase {
    /// Uids of nobody's, so that no other test's /tmp/stepd-UID is touched; each test has its own, as tests run
    /// at the same time.
    private static let victim: uid_t = 64_999, squatter: uid_t = 64_998, runtimeUser: uid_t = 64_997

    private func asVictim(_ argv: [String], environment: [String: String] = [:], user: uid_t = victim) throws -> CommandResult {
        let env = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        return try runCommand("/usr/bin/env", ["-i"] + env.map { "\($0)=\($1)" }.sorted() + ["/usr/bin/setpriv"]
                                  + Unprivileged.asUser(user, argv), timeout: 60)
    }

    /// A folder /tmp/stepd-UID made by another user with mode 0777, holding that user's socket: the daemon
    /// refuses it and says why (exit 73), and stepctl does not talk to the socket in it. Before, both used it:
    /// the squatter could swap the socket, and the victim's `stepctl steps` printed the squatter's numbers.
    func testAFolderAnotherUserMadeInTmpIsRefusedByTheDaemonAndByStepctl() throws {
        try Unprivileged.requireTools()
        let folder = "/tmp/stepd-\(Self.victim)"
        try? FileManager.default.removeItem(atPath: folder)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        XCTAssertEqual(mkdir(folder, 0o777), 0)
        XCTAssertEqual(chmod(folder, 0o777), 0)
        XCTAssertEqual(chown(folder, Self.squatter, Self.squatter), 0)
        let state = try TemporaryDirectory()
        XCTAssertEqual(chown(state.path, Self.victim, Self.victim), 0)
        chmod(state.path, 0o755)

        let daemon = try asVictim([Binaries.stepd, "--replay", Binaries.bundledRecording, "--no-gps",
                                   "--state-dir", state.file("state")])
        XCTAssertEqual(daemon.status, 73, daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("\(folder) belongs to uid \(Self.squatter), not to uid \(Self.victim)"), daemon.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/stepd.sock"), "nothing bound there")

        // The squatter's "daemon": a socket that answers every line with a count of its own.
        let squatter = Process()
        squatter.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        squatter.arguments = Unprivileged.asUser(Self.squatter, ["/usr/bin/python3", "-c", """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
            import os; os.chmod(sys.argv[1], 0o777)
            while True:
                c, _ = s.accept()
                c.sendall(b'{"class":"VERSION","release":"0","proto_major":1,"proto_minor":0}\\n')
                f = c.makefile()
                for line in f:
                    c.sendall(b'{"class":"STEPS","steps":999999}\\n')
            """, folder + "/stepd.sock"])
        try squatter.run()
        defer { squatter.terminate(); squatter.waitUntilExit() }
        try pollUntil("the squatter's socket", timeout: 20) { FileManager.default.fileExists(atPath: folder + "/stepd.sock") }
        let steps = try asVictim([Binaries.stepctl, "steps"])
        XCTAssertFalse(steps.stdout.contains("999999"), steps.stdout)
        XCTAssertNotEqual(steps.status, 0)
        XCTAssertTrue(steps.stderr.contains("not using \(folder)/stepd.sock: \(folder) belongs to uid \(Self.squatter)"), steps.stderr)
    }

    /// $XDG_RUNTIME_DIR comes first, when it is the user's own; the folder the daemon makes in it is 0700.
    /// One that other users can write is refused with the reason, and the daemon goes on to /tmp.
    func testTheRuntimeDirectoryIsUsedFirstOnlyWhenItIsTheUsersOwn() throws {
        try Unprivileged.requireTools()
        let home = try TemporaryDirectory()
        chmod(home.path, 0o755)
        let runtime = home.file("run")
        XCTAssertEqual(mkdir(runtime, 0o700), 0)
        XCTAssertEqual(chown(runtime, Self.runtimeUser, Self.runtimeUser), 0)
        let state = home.file("state")
        XCTAssertEqual(mkdir(state, 0o700), 0)
        XCTAssertEqual(chown(state, Self.runtimeUser, Self.runtimeUser), 0)
        let tmpFolder = "/tmp/stepd-\(Self.runtimeUser)"
        try? FileManager.default.removeItem(atPath: tmpFolder)
        defer { try? FileManager.default.removeItem(atPath: tmpFolder) }

        for (mode, expected) in [(mode_t(0o700), runtime + "/stepd/stepd.sock"), (0o777, tmpFolder + "/stepd.sock")] {
            XCTAssertEqual(chmod(runtime, mode), 0)
            let daemon = Process()
            daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            daemon.arguments = ["-i", "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=\(runtime)", "/usr/bin/setpriv"]
                + Unprivileged.asUser(Self.runtimeUser, [Binaries.stepd, "--replay", Binaries.bundledRecording, "--loop",
                                                    "--no-gps", "--state-dir", state + "/s"])
            let log = Pipe()
            daemon.standardError = log
            daemon.standardOutput = FileHandle.nullDevice
            try daemon.run()
            defer { kill(daemon.processIdentifier, SIGTERM); daemon.waitUntilExit() }
            let steps = try pollFor("stepctl to read the daemon at \(expected)", timeout: 30) { () -> CommandResult? in
                let result = try asVictim([Binaries.stepctl, "status"], environment: ["XDG_RUNTIME_DIR": runtime], user: Self.runtimeUser)
                return result.status == 0 ? result : nil
            }
            XCTAssertTrue(steps.stdout.contains("replay"), steps.stdout)
            XCTAssertTrue(FileManager.default.fileExists(atPath: expected), expected)
            var info = stat()
            XCTAssertEqual(lstat((expected as NSString).deletingLastPathComponent, &info), 0)
            XCTAssertEqual(info.st_mode & 0o777, 0o700)
            XCTAssertEqual(info.st_uid, Self.runtimeUser)
            kill(daemon.processIdentifier, SIGTERM)
            daemon.waitUntilExit()
            let text = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            if mode == 0o777 {
                XCTAssertTrue(text.contains("not listening in \(runtime)/stepd: \(runtime) has mode 777, not 0700"), text)
            }
        }
    }
}
