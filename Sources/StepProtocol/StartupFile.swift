import Glibc

/// A file the daemon reads at start (stepd.conf, a recording and its pressure file, the MQTT TLS and password
/// files) must be a regular file.
/// Opening a FIFO for reading waits for a writer, and a device may never end: the start would hang where no
/// signal ends it (the signals are handled on the thread that waits), so anything else is refused at once.
public enum StartupFile {
    /// What the file is when it is not a regular one ("a FIFO", "a character device"), for a message; nil
    /// for a regular file.
    public static func notRegularKind(mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a file"
        }
    }

    /// Why `path` cannot be a start-up file ("it is a FIFO, not a regular file"), from stat(2) without opening
    /// it; nil when it is a regular file or cannot be stat'ed (opening it then says why).
    public static func refusal(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, let kind = notRegularKind(mode: info.st_mode) else { return nil }
        return "it is \(kind), not a regular file"
    }

    /// Opens `path` for reading without waiting (O_NONBLOCK: a FIFO put there after a check opens at once
    /// too) and returns a blocking descriptor of a regular file, or the reason in strerror's words or
    /// `refusal`'s.
    public static func openForReading(path: String) -> Result<CInt, Refused> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(Refused(errno: errno, reason: String(cString: strerror(errno)), kind: nil)) }
        var info = stat()
        if fstat(fd, &info) == 0, let kind = notRegularKind(mode: info.st_mode) {
            close(fd)
            return .failure(Refused(errno: kind == "a directory" ? EISDIR : 0, reason: "it is \(kind), not a regular file",
                                    kind: kind))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return .success(fd)
    }

    public struct Refused: Error, Sendable {
        /// The errno the open failed with; 0 for a file that opened but is not a regular file (EISDIR for a directory).
        public let errno: Int32
        public let reason: String
        /// What the path is when it opened but is not a regular file ("a FIFO"); nil when the open failed.
        public let kind: String?
    }
}
