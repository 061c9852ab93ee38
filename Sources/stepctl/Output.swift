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
        if let code = writeAll(text, to: STDOUT_FILENO) { failed(code) }
    }

    /// A message on standard error; one that cannot be written there is lost, never a trap.
    static func error(_ text: String) {
        _ = writeAll(text, to: STDERR_FILENO)
    }

    /// write(2) until all of `text` is out, straight to the descriptor (no stdio buffer to flush or share
    /// between threads); the errno of a failure, or nil.
    private static func writeAll(_ text: String, to descriptor: Int32) -> Int32? {
        Array(text.utf8).withUnsafeBytes { raw -> Int32? in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return n < 0 ? errno : EIO }
                offset += n
            }
            return nil
        }
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
