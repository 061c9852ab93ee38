import Foundation
import Locking
import XCTest

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks; a test that cannot listen is skipped.
func listenOnLoopback(backlog: Int32) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    XCTAssertGreaterThanOrEqual(fd, 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
            bind(fd, pointer, length) == 0 && listen(fd, backlog) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw XCTSkip("cannot listen on 127.0.0.1: \(reason)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A TCP socket and whether it connected to `port` on 127.0.0.1; the caller closes it either way.
func connectToLoopback(port: Int) -> (fd: Int32, connected: Bool) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return (fd, result == 0)
}

/// A TCP listener on 127.0.0.1 that never accepts nor sends: a gpsd stand-in for tests that look at the
/// daemon's connection rather than at what gpsd says (the kernel completes the connection in the backlog).
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try listenOnLoopback(backlog: 4)
    }

    deinit { close(fd) }
}

/// The whole text of a /proc file: String(contentsOfFile:) stops after its first read of a file whose size
/// the kernel gives as 0 (a page of /proc/net/tcp: a busy machine's own connection can be further on).
func procFileText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
    defer { try? handle.close() }
    return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
}

/// A TCP listener on 127.0.0.1 that accepts, sends `greeting` (nothing when nil) and then holds each connection
/// open, reading and discarding what comes, until the peer closes it: a port that answers but is not gpsd
/// (silent, or some other service's banner), or with gpsd's VERSION for greeting, a gpsd with nothing to say.
/// It counts the connections accepted.
final class AcceptingListener: Sendable {
    let port: Int
    private let fd: Int32
    private let greeting: String?
    private let counts = Locked(0)

    /// Connections accepted so far.
    var accepted: Int { counts.value }

    init(greeting: String?) throws {
        self.greeting = greeting
        (fd, port) = try listenOnLoopback(backlog: 16)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(fd, nil, nil)
            if connection < 0 { return }
            counts.withLock { $0 += 1 }
            if let greeting {
                let bytes = Array(greeting.utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while read(connection, &buffer, buffer.count) > 0 {}
                close(connection)
            }
        }
    }

    /// Stops accepting; the connections end as their peers close them.
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
