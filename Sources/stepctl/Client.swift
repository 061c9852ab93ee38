import Foundation
import StepProtocol

/// Why stepctl could not talk to the daemon.
enum ClientError: Error, CustomStringConvertible {
    case cannotConnect(path: String, reason: String)
    case closed
    case daemon(message: String)

    var description: String {
        switch self {
        case .cannotConnect(let path, let reason):
            return "cannot connect to stepd at \(path): \(reason) (is the daemon running? try --socket PATH)"
        case .closed: return "the daemon closed the connection"
        case .daemon(let message): return "stepd: \(message)"
        }
    }
}

/// A blocking newline-delimited JSON connection to the daemon; enough for a command-line client.
final class Client {
    private let fd: Int32
    private var pending = Data()

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError.cannotConnect(path: path, reason: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ClientError.cannotConnect(path: path, reason: "path too long")
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
        _ = try readObject()  // VERSION
    }

    deinit { close(fd) }

    func send(_ request: [String: Any]) throws {
        var data = try JSONSerialization.data(withJSONObject: request)
        data.append(0x0A)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { throw ClientError.closed }
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
                return Data(line)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw ClientError.closed }
            pending.append(contentsOf: chunk[0..<n])
        }
    }

    func readObject() throws -> [String: Any] {
        let line = try readLine()
        guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] else { throw ClientError.closed }
        return object
    }

    /// Sends a request and returns its reply (the next non-event line); an ERROR becomes a thrown error.
    func request(_ request: [String: Any], expecting expected: String) throws -> (object: [String: Any], raw: Data) {
        try send(request)
        while true {
            let raw = try readLine()
            guard let object = try JSONSerialization.jsonObject(with: raw) as? [String: Any] else { continue }
            let cls = object["class"] as? String
            if cls == "ERROR" { throw ClientError.daemon(message: object["message"] as? String ?? "error") }
            if cls == expected { return (object, raw) }
        }
    }
}
