import Foundation

/// sd_notify(3) without libsystemd: one datagram of `KEY=value` lines to the AF_UNIX socket named by
/// $NOTIFY_SOCKET (a path, or an abstract name written with a leading "@").
public final class Notifier: Sendable {
    public let socketPath: String
    private let descriptor: CInt
    private let lock = NSLock()

    /// The notifier systemd asked for, or nil when not run by systemd with Type=notify.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Notifier? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        return Notifier(socketPath: path)
    }

    public init?(socketPath: String) {
        guard socketPath.hasPrefix("/") || socketPath.hasPrefix("@") else { return nil }
        self.socketPath = socketPath
        descriptor = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        if descriptor < 0 { return nil }
    }

    deinit { close(descriptor) }

    /// Sends the lines as one message; false if systemd could not be reached (nothing else to do then).
    @discardableResult
    public func send(_ lines: [String]) -> Bool {
        let message = Array(lines.joined(separator: "\n").utf8)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: pathBytes) }
        // An abstract address is exactly its bytes; a path one ends at its NUL.
        let length = MemoryLayout.offset(of: \sockaddr_un.sun_path)! + pathBytes.count + (abstract ? 0 : 1)
        lock.lock()
        defer { lock.unlock() }
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, CInt(MSG_NOSIGNAL), $0, socklen_t(length))
                }
            }
        }
        return sent == message.count
    }

    public func ready(status: String) { send(["READY=1", "STATUS=" + Self.oneLine(status), "MAINPID=\(getpid())"]) }
    public func status(_ text: String) { send(["STATUS=" + Self.oneLine(text)]) }
    public func watchdog() { send(["WATCHDOG=1"]) }
    public func stopping(status: String) { send(["STOPPING=1", "STATUS=" + Self.oneLine(status)]) }

    /// How often to send WATCHDOG=1: half of WATCHDOG_USEC, as sd_watchdog_enabled(3) advises; nil when
    /// the watchdog is off or meant for another process (WATCHDOG_PID).
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment,
                                        pid: pid_t = getpid()) -> TimeInterval? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], pid_t(owner) != pid { return nil }
        return Double(usec) / 2_000_000
    }

    private static func oneLine(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: " ")
    }
}
