import Foundation
import XCTest

/// The gpsd source's connection (libgps's socket) is close-on-exec, like every descriptor the sources open
/// (IIOCloseOnExecTests): libgps makes it without SOCK_CLOEXEC, so the shim sets the flag once it connected.
final class GPSDCloseOnExecTests: XCTestCase {
    func testTheConnectionToGpsdIsCloseOnExec() throws {
        let listener = try SilentListener()
        let port = listener.port

        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--gpsd", "127.0.0.1:\(port)"])
        let pid = daemon.process.processIdentifier
        var connection: (fd: Int32, closeOnExec: Bool)?
        try pollUntil("the daemon to connect to 127.0.0.1:\(port)", timeout: 15, every: 0.1, detail: "log:\n\(daemon.log)") {
            connection = Self.tcpConnection(of: pid, toPort: port)
            return connection != nil
        }
        XCTAssertEqual(connection?.closeOnExec, true, "libgps's socket (fd \(connection?.fd ?? -1)) would be inherited by a child")
        XCTAssertEqual(daemon.terminate(), 0)
    }

    /// The descriptor of `pid` connected to 127.0.0.1:`port`, and whether it is close-on-exec.
    static func tcpConnection(of pid: Int32, toPort port: Int) -> (fd: Int32, closeOnExec: Bool)? {
        let remote = String(format: "0100007F:%04X", port)
        let table = procFileText("/proc/\(pid)/net/tcp")
        let inodes = Set(table.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let fields = line.split(separator: " ")
            return fields.count > 9 && fields[2] == remote ? String(fields[9]) : nil
        })
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap(Int32.init)
        for fd in fds {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:["), inodes.contains(String(target.dropFirst(8).dropLast())),
                  let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8),
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                  let flags = Int(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
            else { continue }
            return (fd, flags & Int(O_CLOEXEC) != 0)
        }
        return nil
    }
}
