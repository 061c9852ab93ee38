import Foundation

/// Why the sockets systemd passed cannot be used.
public enum SocketActivationError: Error, Equatable, CustomStringConvertible {
    case badVariable(name: String, value: String)
    case notAListeningStreamSocket(descriptor: CInt, reason: String)

    public var description: String {
        switch self {
        case .badVariable(let name, let value): return "\(name)=\"\(value)\" is not a valid socket-activation variable"
        case .notAListeningStreamSocket(let fd, let reason):
            return "descriptor \(fd) passed by systemd is not a listening stream socket: \(reason)"
        }
    }
}

/// systemd's socket activation (sd_listen_fds(3)): the manager binds the socket, keeps it across restarts,
/// and passes it as descriptors 3, 4, … with LISTEN_PID (who they are for), LISTEN_FDS (how many) and
/// LISTEN_FDNAMES (colon-separated names).
public enum SocketActivation {
    /// SD_LISTEN_FDS_START.
    public static let firstDescriptor: CInt = 3

    public struct PassedSocket: Equatable, Sendable {
        public var descriptor: CInt
        public var name: String?
        public init(descriptor: CInt, name: String?) {
            self.descriptor = descriptor
            self.name = name
        }
    }

    /// The sockets passed to process `pid`, from the variables alone. Variables meant for another process
    /// (a parent's LISTEN_PID) mean none.
    public static func parse(environment: [String: String], pid: pid_t) throws -> [PassedSocket] {
        guard let pidText = environment["LISTEN_PID"] else { return [] }
        guard let listenPID = pid_t(pidText), listenPID > 0 else {
            throw SocketActivationError.badVariable(name: "LISTEN_PID", value: pidText)
        }
        guard listenPID == pid else { return [] }
        let countText = environment["LISTEN_FDS"] ?? ""
        guard let count = Int(countText), count >= 0, count < 1024 else {
            throw SocketActivationError.badVariable(name: "LISTEN_FDS", value: countText)
        }
        var names: [String?] = Array(repeating: nil, count: count)
        if let namesText = environment["LISTEN_FDNAMES"] {
            let parts = namesText.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            for (i, part) in parts.prefix(count).enumerated() where !part.isEmpty { names[i] = part }
        }
        return (0..<count).map { PassedSocket(descriptor: firstDescriptor + CInt($0), name: names[$0]) }
    }

    /// The sockets passed to this process. Like sd_listen_fds(1), it removes the variables so that a child
    /// does not take them for its own, and marks the descriptors close-on-exec.
    public static func takeSockets() throws -> [PassedSocket] {
        let sockets = try parse(environment: ProcessInfo.processInfo.environment, pid: getpid())
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        for socket in sockets {
            let flags = fcntl(socket.descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(socket.descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
        return sockets
    }

    /// Checks that `descriptor` is a listening Unix stream socket and returns its path (nil if abstract).
    public static func unixListeningPath(of descriptor: CInt) throws -> String? {
        func fail(_ reason: String) -> SocketActivationError {
            .notAListeningStreamSocket(descriptor: descriptor, reason: reason)
        }
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &value, &length) == 0 else {
            throw fail(String(cString: strerror(errno)))
        }
        guard value == CInt(SOCK_STREAM.rawValue) else { throw fail("not SOCK_STREAM") }
        length = socklen_t(MemoryLayout<CInt>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0, value != 0 else {
            throw fail("not listening")
        }
        var address = sockaddr_un()
        var addressLength = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &addressLength) }
        }
        guard result == 0 else { throw fail(String(cString: strerror(errno))) }
        guard address.sun_family == sa_family_t(AF_UNIX) else { throw fail("not an AF_UNIX socket") }
        let path = withUnsafeBytes(of: &address.sun_path) { raw -> String? in
            guard let first = raw.first, first != 0 else { return nil }
            return String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path
    }
}
