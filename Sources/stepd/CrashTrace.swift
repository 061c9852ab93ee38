import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A crash on a board must leave a trace in the journal: Swift's runtime backtracer prints a symbolicated
/// backtrace of every thread to stderr on a fatal signal (SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGABRT, a trap).
/// It is configured by SWIFT_BACKTRACE, which the runtime reads before `main`, and the release stepd links the
/// runtime statically, so it needs `swift-backtrace-static` named explicitly: it finds no helper by itself.
/// So the daemon, started without SWIFT_BACKTRACE, finds the helper and executes itself again with it set
/// (same PID, same descriptors: systemd's notify socket and passed socket are unaffected).
enum CrashTrace {
    static let variable = "SWIFT_BACKTRACE"
    static let helperName = "swift-backtrace-static"

    /// Returns only when the backtracer is already configured, or cannot be (no helper found, exec failed).
    static func enableByRestarting() {
        guard getenv(variable) == nil, let executable = executablePath() else { return }
        var settings = "enable=yes,interactive=no,color=no,threads=all,output-to=stderr"
        if let helper = helperPath(executable: executable) { settings += ",swift-backtrace=\(helper)" }
        setenv(variable, settings, 1)
        let arguments = CommandLine.unsafeArgv
        execv(executable, arguments)
        // Still here: the exec failed; run on, without backtraces, rather than not at all.
        unsetenv(variable)
    }

    /// Where the helper may be: beside an installed stepd (`make install` puts it in libexec/stepd; scripts/test
    /// does the same beside a development build), or in the Swift toolchain stepd is part of. Only paths fixed by
    /// where the binary itself is: never looked up through PATH, which the user who starts the daemon (root
    /// under systemd or sudo) may have pointed anywhere, and the helper runs with the daemon's rights on a crash.
    static func helperPath(executable: String) -> String? {
        let bin = (executable as NSString).deletingLastPathComponent
        let candidates = [
            "\(bin)/../libexec/stepd/\(helperName)",
            "\(bin)/../libexec/swift/linux/\(helperName)",
        ]
        return candidates.lazy.compactMap(realPath).first { access($0, X_OK) == 0 }
    }

    private static func executablePath() -> String? {
        realPath("/proc/self/exe")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
