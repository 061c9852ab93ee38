import Foundation
import Locking
import StepProtocol
import Timekeeping

/// Why stepctl could not get an answer from the daemon.
enum ClientError: Error, CustomStringConvertible {
    case cannotConnect(path: String, reason: String)
    /// The socket is there but this user may not connect (EACCES): the daemon makes it 0660 for its group.
    case notPermitted(path: String, group: String)
    /// The daemon closed the connection; `message` is the ERROR it sent first, if it sent one.
    case closed(message: String?)
    /// The daemon answered the request with an ERROR: its code (nil when this stepctl does not know it) and words.
    case daemon(code: ErrorCode?, message: String)
    /// A reply of the class asked for whose fields are not what StepProtocol says (a daemon of another version).
    case unreadable(messageClass: String, reason: String)

    var description: String {
        switch self {
        case .cannotConnect(let path, let reason):
            return "cannot connect to stepd at \(path): \(reason) (is the daemon running? try --socket PATH)"
        case .notPermitted(let path, let group):
            return "cannot connect to stepd at \(path): permission denied; add yourself to group \(group) "
                + "(usermod -aG \(group) $USER) and log in again"
        case .closed(let message?): return "stepd closed the connection: \(message)"
        case .closed(nil): return "the daemon closed the connection"
        case .daemon(_, let message): return "stepd: \(message)"
        case .unreadable(let name, let reason): return "cannot read stepd's \(name) reply: \(reason)"
        }
    }

    /// The exit status for this failure (sysexits.h, the table in stepctl(1)).
    var exitStatus: ExitStatus {
        switch self {
        case .cannotConnect, .closed: return .unavailable
        case .notPermitted: return .noPermission
        case .daemon(.notPermitted?, _): return .noPermission
        case .daemon: return .failure
        case .unreadable: return .software
        }
    }

    /// The daemon went away (a restart) or is not there yet: `watch` and `graph` wait for it to come back.
    var isConnectionLoss: Bool {
        switch self {
        case .cannotConnect, .closed: return true
        default: return false
        }
    }

    /// No daemon listens at the path yet (no socket file, or nobody accepting on it): what a watcher started
    /// before stepd (at boot, or in another terminal) meets. A path that can never be a socket is not this.
    var isDaemonNotUp: Bool {
        guard case .cannotConnect(_, let reason) = self else { return false }
        return [ENOENT, ECONNREFUSED].contains { reason == String(cString: strerror($0)) }
    }

    /// The group that owns the socket at `path` (stepd under systemd: stepd.socket's SocketGroup), or "stepd"
    /// when the path cannot be examined (a directory this user may not search) or the group is root's (a
    /// daemon started by hand as root), to which nobody should be added.
    static func socketGroup(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0, info.st_gid != 0, let entry = getgrgid(info.st_gid), let name = entry.pointee.gr_name else { return "stepd" }
        return String(cString: name)
    }
}

/// A blocking newline-delimited JSON connection to the daemon; enough for a command-line client. One thread
/// uses it at a time (`graph` hands it to its reader thread); what it has read is behind a lock all the same.
final class Client: Sendable {
    private let fd: Int32
    private struct Received {
        var pending = Data()
        /// The last ERROR read, so that a connection the daemon closes after one can say why.
        var lastError: String?
    }
    private let received = Locked(Received())

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError.cannotConnect(path: path, reason: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            let limit = MemoryLayout.size(ofValue: address.sun_path) - 1
            throw ClientError.cannotConnect(path: path.count > 80 ? String(path.prefix(80)) + "…" : path,
                                            reason: "the path is \(path.utf8.count) bytes; a Unix socket's address holds at most \(limit)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            if code == EACCES { throw ClientError.notPermitted(path: path, group: ClientError.socketGroup(path)) }
            throw ClientError.cannotConnect(path: path, reason: String(cString: strerror(code)))
        }
        // VERSION, or an ERROR (too many clients) before the daemon closes the connection.
        let greeting = try readLine()
        guard let head = MessageHead(line: greeting) else {
            throw ClientError.closed(message: "the daemon sent something that is not a JSON object")
        }
        if head.class == ErrorMessage.messageClass {
            throw ClientError.closed(message: Self.error(in: greeting).message)
        }
    }

    deinit { close(fd) }

    func send(_ request: Request) throws {
        let data = Wire.line(request)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                // MSG_NOSIGNAL: a daemon that closed the connection is an EPIPE here, not a SIGPIPE death.
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { throw ClientError.closed(message: errorLeftBehind()) }
                offset += n
            }
        }
    }

    /// The next line from the daemon, raw.
    func readLine() throws -> Data {
        while true {
            let next: Data? = received.withLock { received in
                guard let newline = received.pending.firstIndex(of: 0x0A) else { return nil }
                let line = Data(received.pending[received.pending.startIndex..<newline])
                received.pending = Data(received.pending[(newline + 1)...])
                if let error = Self.errorMessage(in: line) { received.lastError = error }
                return line
            }
            if let next { return next }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw ClientError.closed(message: received.withLock { $0.lastError }) }
            received.withLock { $0.pending.append(contentsOf: chunk[0..<n]) }
        }
    }

    /// Sends a request and returns its reply (the next line of the reply's class) as the daemon wrote it and
    /// decoded; an ERROR becomes a thrown error.
    func request<Reply: DaemonMessage>(_ request: Request, expecting: Reply.Type) throws -> (reply: Reply, raw: Data) {
        try send(request)
        while true {
            let raw = try readLine()
            guard let head = MessageHead(line: raw) else { continue }
            if head.class == ErrorMessage.messageClass {
                let error = Self.error(in: raw)
                throw ClientError.daemon(code: error.errorCode, message: error.message)
            }
            guard head.class == Reply.messageClass else { continue }
            do {
                return (try JSONDecoder().decode(Reply.self, from: raw), raw)
            } catch {
                throw ClientError.unreadable(messageClass: Reply.messageClass, reason: "\(error)")
            }
        }
    }

    private static func error(in line: Data) -> ErrorMessage {
        (try? JSONDecoder().decode(ErrorMessage.self, from: line)) ?? ErrorMessage(code: .internal, message: "error")
    }

    /// The message of `line` when it is an ERROR.
    private static func errorMessage(in line: Data) -> String? {
        guard line.range(of: Data("\"ERROR\"".utf8)) != nil, MessageHead(line: line)?.class == ErrorMessage.messageClass
        else { return nil }
        return error(in: line).message
    }

    /// After a failed write: the lines the daemon sent before it closed, for an ERROR that says why.
    private func errorLeftBehind() -> String? {
        while let line = try? readLine() { _ = line }
        return received.withLock { $0.lastError }
    }
}

/// What `watch` and `graph` do when the daemon goes away: a `systemctl restart stepd` closes every connection,
/// and a watcher that ended with it would have to be restarted by hand. They connect again, every half
/// second, until the daemon is back, and say so once on standard error; `--once` ends them instead (69).
/// Started before the daemon (no socket yet, or nobody listening), they wait for it in the same way.
struct DaemonFollower: Sendable {
    let options: ConnectionOptions
    let watch: Request
    let once: Bool
    var lost: @Sendable (ClientError) -> Void = { error in
        Output.error("stepctl: \(error); waiting for stepd to come back (--once to exit instead)\n")
    }
    var back: @Sendable () -> Void = { Output.error("stepctl: connected to stepd again\n") }
    var notUp: @Sendable (ClientError) -> Void = { error in
        guard case .cannotConnect(let path, let reason) = error else {
            return Output.error("stepctl: \(error); waiting for stepd to start (--once to exit instead)\n")
        }
        Output.error("stepctl: stepd is not up at \(path) yet (\(reason.prefix(1).lowercased() + reason.dropFirst())); "
                     + "waiting for stepd to start (--once to exit instead)\n")
    }
    var up: @Sendable () -> Void = { Output.error("stepctl: connected to stepd\n") }

    /// Connects, sends WATCH and hands the connection to `events`, which reads until it throws; again after a
    /// lost connection, or while no daemon is up yet. A daemon's ERROR, a first connection that cannot be made
    /// for another reason (permission, a path too long), or any failure with `once`, is thrown.
    /// `first`: a connection already watching, to start with.
    func run(first: Client? = nil, _ events: (Client) throws -> Void) throws -> Never {
        var connectedBefore = false, waiting = false
        var first = first
        while true {
            do {
                let client: Client
                if let ready = first {
                    client = ready
                    first = nil
                } else {
                    client = try options.connect()
                    _ = try client.request(watch, expecting: WatchMessage.self)
                }
                if waiting { connectedBefore ? back() : up() }
                waiting = false
                connectedBefore = true
                try events(client)
            } catch let error as ClientError
                        where !once && (connectedBefore ? error.isConnectionLoss : error.isDaemonNotUp) {
                if !waiting { connectedBefore ? lost(error) : notUp(error) }
                waiting = true
                SystemClock.pause(seconds: 0.5)
            }
        }
    }
}
