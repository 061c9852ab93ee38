import Foundation
import StepServer

/// One daemon per state directory: an exclusive `flock` on `stepd.lock` there, held for the life of the
/// process (the kernel drops it when the process ends, `kill -9` included, so a stale file never blocks).
/// Two daemons writing one history would each think it owns the counter.
///
/// The lock file goes with the directory (`rm -rf` under a running daemon), and a second daemon started then
/// would take the new one while the first goes on, both running and each moving the other's database aside. So the
/// directory's path is also claimed by a listening socket in the abstract namespace (`@stepd-state:PATH`),
/// which belongs to no folder: it survives the directory, and the kernel drops it with the process too.
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
    /// The abstract socket claiming the directory's path (nil when the claim was already held by this process).
    private let claim: CInt?

    /// Takes the lock, creating the directory and the file as needed. A directory that cannot be written
    /// (a read-only card) still locks through a lock file left by an earlier run; without one, `nil`: the
    /// store cannot write there either, and the daemon runs on, counting in memory.
    public static func acquire(directory: String, claimed: Bool = false) throws -> StateDirectoryLock? {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o750])
        let claim = claimed ? nil : try claimPath(of: directory)
        let path = (directory as NSString).appendingPathComponent(fileName)
        var descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        var writable = true
        if descriptor < 0 {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            writable = false
        }
        guard descriptor >= 0 else {
            let error = errno
            if let claim { close(claim) }
            if error == EROFS || error == EACCES || error == ENOENT || error == ENOTDIR { return nil }
            throw Failure.cannotLock(path: path, reason: String(cString: strerror(error)))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let holder = holderPID(descriptor: descriptor)
            close(descriptor)
            if let claim { close(claim) }
            if error == EWOULDBLOCK { throw Failure.held(directory: directory, pid: holder) }
            throw Failure.cannotLock(path: path, reason: String(cString: strerror(error)))
        }
        if writable {
            // The PID in the file is for people (`cat stepd.lock`); the holder is found through /proc/locks.
            let text = "\(getpid())\n"
            _ = ftruncate(descriptor, 0)
            _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        }
        return StateDirectoryLock(path: path, descriptor: descriptor, claim: claim)
    }

    /// The lock file taken again in a directory created anew, the path's claim staying with `self`.
    public func relock(directory: String) throws -> StateDirectoryLock? {
        try Self.acquire(directory: directory, claimed: true)
    }

    private init(path: String, descriptor: CInt, claim: CInt?) {
        self.path = path
        self.descriptor = descriptor
        self.claim = claim
    }

    deinit {
        close(descriptor)
        if let claim { close(claim) }
    }

    /// Binds and listens on `@stepd-state:` and the directory's real path (a hash of it when too long for a
    /// socket address), or throws `held` with the holder's PID (SO_PEERCRED of a connection to it).
    static func claimPath(of directory: String) throws -> CInt {
        var real = directory
        if let resolved = realpath(directory, nil) {
            real = String(cString: resolved)
            free(resolved)
        }
        var name = "stepd-state:" + real
        if name.utf8.count > 100 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325   // FNV-1a: the same path, the same name
            for byte in real.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            name = "stepd-state:" + String(hash, radix: 16) + ":" + String(real.suffix(60))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0   // the abstract namespace
            for (i, byte) in bytes.enumerated() { raw[i + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw Failure.cannotLock(path: directory, reason: "socket: \(String(cString: strerror(errno)))")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        if bound == 0, listen(fd, 4) == 0 { return fd }
        let error = errno
        close(fd)
        guard error == EADDRINUSE else {
            throw Failure.cannotLock(path: directory, reason: "cannot claim it: \(String(cString: strerror(error)))")
        }
        throw Failure.held(directory: directory, pid: claimHolder(address: address, length: length))
    }

    /// The PID listening on a claim: connect, and ask the kernel who is at the other end.
    private static func claimHolder(address: sockaddr_un, length: socklen_t) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = address
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else { return nil }
        var credentials = PeerCredentials.KernelUcred()
        var size = socklen_t(MemoryLayout<PeerCredentials.KernelUcred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0 else { return nil }
        return credentials.pid
    }

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
