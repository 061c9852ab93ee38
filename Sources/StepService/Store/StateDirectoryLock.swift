import Foundation

/// One daemon per state directory: an exclusive `flock` on `stepd.lock` there, held for the life of the
/// process (the kernel drops it when the process ends, `kill -9` included, so a stale file never blocks).
/// Two daemons writing one history would each think it owns the counter.
public final class StateDirectoryLock {
    public enum Failure: Error, CustomStringConvertible {
        case held(directory: String, pid: Int32?)
        case cannotLock(path: String, reason: String)

        public var description: String {
            switch self {
            case .held(let directory, let pid):
                let holder = pid.map { "stepd (PID \($0))" } ?? "another stepd"
                return "\(holder) already uses the state directory \(directory); stop it first, or give this one another --state-dir"
            case .cannotLock(let path, let reason):
                return "cannot lock \(path): \(reason)"
            }
        }
    }

    public static let fileName = "stepd.lock"
    public let path: String
    private let descriptor: CInt

    /// Takes the lock, creating the directory and the file as needed. A directory that cannot be written
    /// (a read-only card) still locks through a lock file left by an earlier run; without one, `nil`: the
    /// store cannot write there either, and the daemon runs on, counting in memory.
    public static func acquire(directory: String) throws -> StateDirectoryLock? {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o750])
        let path = (directory as NSString).appendingPathComponent(fileName)
        var descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        var writable = true
        if descriptor < 0 {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            writable = false
        }
        guard descriptor >= 0 else {
            if errno == EROFS || errno == EACCES || errno == ENOENT || errno == ENOTDIR { return nil }
            throw Failure.cannotLock(path: path, reason: String(cString: strerror(errno)))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let holder = holderPID(descriptor: descriptor)
            close(descriptor)
            if error == EWOULDBLOCK { throw Failure.held(directory: directory, pid: holder) }
            throw Failure.cannotLock(path: path, reason: String(cString: strerror(error)))
        }
        if writable {
            // The PID in the file is for people (`cat stepd.lock`); the holder is found through /proc/locks.
            let text = "\(getpid())\n"
            _ = ftruncate(descriptor, 0)
            _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        }
        return StateDirectoryLock(path: path, descriptor: descriptor)
    }

    private init(path: String, descriptor: CInt) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Whether the path still names the locked file: a state directory removed and created again has a new
    /// lock file, which nobody holds.
    public var isCurrent: Bool {
        var held = stat(), named = stat()
        return fstat(descriptor, &held) == 0 && stat(path, &named) == 0
            && held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    /// The PID holding a flock on the file open as `descriptor`: /proc/locks lists each lock with the holder
    /// and the file's inode ("1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"). The PID written in the file
    /// is the fallback (a holder on a read-only directory could not write it).
    static func holderPID(descriptor: CInt) -> Int32? {
        var info = stat()
        if fstat(descriptor, &info) == 0, let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) {
            for line in locks.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "WRITE",
                      fields[5].split(separator: ":").last.flatMap({ UInt64($0) }) == UInt64(info.st_ino),
                      let pid = Int32(fields[4]) else { continue }
                return pid
            }
        }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
