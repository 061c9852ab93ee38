#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The name the kernel shows for a thread (/proc/PID/task/TID/comm, `top -H`, scripts/bench-iio's wake-ups per
/// thread). Foundation's `Thread.name` does not reach the kernel on Linux: every thread stepd started showed as
/// "stepd".
public enum ThreadName {
    /// Names the calling thread `name`, cut to the kernel's 15 bytes (never inside a character).
    public static func setForCurrentThread(_ name: String) {
        #if os(Linux)
        let utf8 = Array(name.utf8)
        var count = min(15, utf8.count)
        while count > 0, count < utf8.count, utf8[count] & 0xC0 == 0x80 { count -= 1 }
        // What pthread_setname_np does on Linux (which Swift's Glibc module does not export): write the name to
        // the calling thread's comm file.
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = utf8[..<count].withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        #endif
    }
}
