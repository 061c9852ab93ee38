import Foundation
import StepProtocol

/// Standard output, checked. SIGPIPE is ignored (StepCtl.main), so a closed pipe is an EPIPE from write(2):
/// unchecked, `watch` would go on reading events and writing them nowhere for ever, and FileHandle's write
/// traps on it. A reader that has gone (`stepctl watch | head -n 2`) has what it asked for: stepctl ends
/// quietly with status 0, as a command killed by SIGPIPE would end silently. Any other failure to write (a
/// full disk, a terminal gone) is said on standard error and ends stepctl with EX_IOERR (74).
enum Output {
    /// Writes `text` and flushes, so that a pipe sees it at once; never returns when the write fails.
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { raw in fwrite(raw.baseAddress, 1, raw.count, stdout) }
        if written < bytes.count { failed(errno) }
        if fflush(stdout) != 0 { failed(errno) }
    }

    /// A message on standard error; one that cannot be written there is lost, never a trap.
    static func error(_ text: String) {
        _ = text.withCString { fputs($0, stderr) }
    }

    /// Ends stepctl after a failed write to standard output.
    static func failed(_ code: Int32) -> Never {
        if code != EPIPE {
            let reason = String(cString: strerror(code))
            Output.error("stepctl: cannot write to standard output: \(reason)\n")
        }
        // _exit: exit(3) would flush standard output again into the same failure.
        _exit(code == EPIPE ? ExitStatus.success.rawValue : ExitStatus.ioError.rawValue)
    }
}
