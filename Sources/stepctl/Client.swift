import Foundation
import StepProtocol

/// Why stepctl could not get an answer from the daemon.
enum ClientError: Error, CustomStringConvertible {
    case cannotConnect(path: String, reason: String)
    /// The daemon closed the connection; `message` is the ERROR it sent first, if it sent one.
    case closed(message: String?)
    /// The daemon answered the request with an ERROR.
    case daemon(message: String)
    /// A reply of the class asked for whose fields are not what StepProtocol says (a daemon of another version).
    case unreadable(messageClass: String, reason: String)

    var description: String {
        switch self {
        case .cannotConnect(let path, let reason):
            return "cannot connect to stepd at \(path): \(reason) (is the daemon running? try --socket PATH)"
        case .closed(let message?): return "stepd closed the connection: \(message)"
        case .closed(nil): return "the daemon closed the connection"
        case .daemon(let message): return "stepd: \(message)"
        case .unreadable(let name, let reason): return "cannot read stepd's \(name) reply: \(reason)"
        }
    }

    /// The exit status for this failure (sysexits.h, the table in stepctl(1)).
    var exitStatus: ExitStatus {
        switch self {
        case .cannotConnect, .closed: return .unavailable
        // The daemon's words for a refused permission (RequestError.notPermitted).
        case .daemon(let message) where message.contains("is not permitted"): return .noPermission
        case .daemon: return .failure
        case .unreadable: return .software
        }
    }
}

/// A blocking newline-delimited JSON connection to the daemon; enough for a command-line client.
final class Client {
    private let fd: Int32
    private var pending = Data()
    /// The last ERROR read, so that a connection the daemon closes after one can say why.
    private var lastError: String?

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
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ClientError.cannotConnect(path: path, reason: reason)
        }
        // VERSION, or an ERROR (too many clients) before the daemon closes the connection.
        let greeting = try readLine()
        guard let head = MessageHead(line: greeting) else {
            throw ClientError.closed(message: "the daemon sent something that is not a JSON object")
        }
        if head.class == ErrorMessage.messageClass {
            throw ClientError.closed(message: Self.errorMessage(greeting))
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
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                noteError(in: Data(line))
                return Data(line)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw ClientError.closed(message: lastError) }
            pending.append(contentsOf: chunk[0..<n])
        }
    }

    /// Sends a request and returns its reply (the next line of the reply's class) as the daemon wrote it and
    /// decoded; an ERROR becomes a thrown error.
    func request<Reply: DaemonMessage>(_ request: Request, expecting: Reply.Type) throws -> (reply: Reply, raw: Data) {
        try send(request)
        while true {
            let raw = try readLine()
            guard let head = MessageHead(line: raw) else { continue }
            if head.class == ErrorMessage.messageClass { throw ClientError.daemon(message: Self.errorMessage(raw)) }
            guard head.class == Reply.messageClass else { continue }
            do {
                return (try JSONDecoder().decode(Reply.self, from: raw), raw)
            } catch {
                throw ClientError.unreadable(messageClass: Reply.messageClass, reason: "\(error)")
            }
        }
    }

    private static func errorMessage(_ line: Data) -> String {
        (try? JSONDecoder().decode(ErrorMessage.self, from: line))?.message ?? "error"
    }

    private func noteError(in line: Data) {
        guard line.range(of: Data("\"ERROR\"".utf8)) != nil, MessageHead(line: line)?.class == ErrorMessage.messageClass
        else { return }
        lastError = Self.errorMessage(line)
    }

    /// After a failed write: the lines the daemon sent before it closed, for an ERROR that says why.
    private func errorLeftBehind() -> String? {
        while let line = try? readLine() { _ = line }
        return lastError
    }
}
