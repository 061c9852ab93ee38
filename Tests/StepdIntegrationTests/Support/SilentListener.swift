import Foundation
import XCTest

/// A TCP listener on 127.0.0.1 that never accepts nor sends: a gpsd stand-in for tests that look at the
/// daemon's connection rather than at what gpsd says (the kernel completes the connection in the backlog).
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { [fd] in
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw XCTSkip("cannot listen on 127.0.0.1: \(reason)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
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
