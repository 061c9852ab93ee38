import Foundation
import XCTest

/// Clients run as another user through setpriv, the way an unprivileged local user reaches the daemon.
enum Unprivileged {
    static let nobody: uid_t = 65534

    /// Skips unless the test runs as root with setpriv and python3 at hand.
    static func requireTools() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to run clients as another user") }
        for tool in ["/usr/bin/setpriv", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is not installed")
        }
    }

    /// Lets every user connect to the daemon's socket (the daemon makes it 0660 for its group). The socket appears
    /// with that mode (bound under another name, then linked); the wait for it is a check that stays cheap.
    static func openSocket(_ daemon: Daemon) {
        let deadline = Date(timeIntervalSinceNow: 10)
        var info = stat()
        while Date() < deadline, stat(daemon.socketPath, &info) != 0 || info.st_mode & 0o777 != 0o660 { usleep(10_000) }  // poll interval of a wait for a state, not a fixed wait
        chmod(daemon.socketPath, 0o666)
        chmod((daemon.socketPath as NSString).deletingLastPathComponent, 0o755)
    }

    /// The command line that runs `argv` as `uid` with no supplementary groups, or with `groups`.
    static func asUser(_ uid: uid_t, _ argv: [String], groups: [gid_t] = []) -> [String] {
        let supplementary = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return ["--reuid=\(uid)", "--regid=\(uid)", supplementary] + argv
    }

    /// Tests/fixtures/hostile-client, as `python3 -c SOURCE MODE ARGS...`, so that the other user need not read the checkout.
    static func hostile(_ arguments: [String]) throws -> [String] {
        let source = try String(contentsOf: Binaries.repository.appendingPathComponent("Tests/fixtures/hostile-client"), encoding: .utf8)
        return ["/usr/bin/python3", "-c", source] + arguments
    }

    /// Runs Tests/fixtures/hostile-client as nobody to completion and returns its JSON line.
    static func runHostile(_ arguments: [String], timeout: TimeInterval = 120) throws -> [String: Any] {
        let result = try runCommand("/usr/bin/setpriv", asUser(nobody, try hostile(arguments)), timeout: timeout)
        XCTAssertEqual(result.status, 0, result.stderr)
        let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], result.stdout + result.stderr)
    }

    /// A running hostile-client as nobody, with its stdin and stdout.
    class Running {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        private var buffered = Data()

        init(_ arguments: [String], uid: uid_t = Unprivileged.nobody, groups: [gid_t] = []) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = Unprivileged.asUser(uid, try Unprivileged.hostile(arguments), groups: groups)
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try launch()
        }

        func launch() throws { try process.run() }

        /// The next line it prints, waiting at most `timeout`.
        func readLine(timeout: TimeInterval = 30) throws -> String {
            let deadline = Date().addingTimeInterval(timeout)
            let fd = output.fileHandleForReading.fileDescriptor
            while Date() < deadline {
                if let newline = buffered.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
                    buffered = Data(buffered[(newline + 1)...])
                    return line
                }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(fd, &chunk, chunk.count)
                guard n > 0 else { break }
                buffered.append(contentsOf: chunk[0..<n])
            }
            throw NSError(domain: "Unprivileged", code: 1, userInfo: [NSLocalizedDescriptionKey: "no line from hostile-client"])
        }

        func readObject(timeout: TimeInterval = 30) throws -> [String: Any] {
            let line = try readLine(timeout: timeout)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
        }

        func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

        /// Closes its stdin (which ends `idle`) and waits for it.
        func finish() {
            try? input.fileHandleForWriting.close()
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning, Date() < deadline { usleep(20_000) }  // poll interval of a wait for a state, not a fixed wait
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    /// A hostile-client started with posix_spawn and reaped by hand: Foundation's Process learns of an exit
    /// only when every descendant has let go of a descriptor it passes, so it would not see a parent that
    /// forks and exits, and would leave it a zombie holding its PID.
    final class Spawned: Running {
        private(set) var pid: pid_t = 0

        override func launch() throws {
            let argv = ["/usr/bin/setpriv"] + (process.arguments ?? [])
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, input.fileHandleForReading.fileDescriptor, 0)
            posix_spawn_file_actions_adddup2(&actions, output.fileHandleForWriting.fileDescriptor, 1)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var cArguments = argv.map { strdup($0) } + [nil]
            defer { cArguments.forEach { free($0) } }
            guard posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ) == 0 else {
                throw NSError(domain: "Unprivileged", code: 2, userInfo: [NSLocalizedDescriptionKey: "cannot spawn setpriv"])
            }
        }

        private var reaped = false

        /// Waits for the spawned process itself (not its children) to exit.
        func reap() {
            guard !reaped else { return }
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            reaped = true
        }

        deinit {
            // Its forked child reads stdin: closing it lets the child finish.
            try? input.fileHandleForWriting.close()
            if !reaped { kill(pid, SIGKILL); reap() }
        }
    }
}

/// What /proc says of a process.
enum ProcStatus {
    /// The resident set in bytes.
    static func residentBytes(of pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return 0
    }
}
