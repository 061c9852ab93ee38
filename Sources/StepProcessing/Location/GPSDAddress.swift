/// Why an address for gpsd was refused.
public enum GPSDAddressError: Error, Equatable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let text): return "gpsd address \"\(text)\" is not HOST:PORT (e.g. localhost:2947)"
        }
    }
}

/// gpsd's address, `HOST:PORT` (IPv6 hosts in brackets).
public struct GPSDAddress: Sendable, Equatable, CustomStringConvertible {
    public static let defaultPort = "2947"
    public var host: String
    public var port: String

    public init(host: String = "localhost", port: String = GPSDAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws {
        var host = text
        var port = GPSDAddress.defaultPort
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") { port = String(rest.dropFirst()) } else if !rest.isEmpty { throw GPSDAddressError.malformed(text) }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            port = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, let number = Int(port), (1...65535).contains(number) else { throw GPSDAddressError.malformed(text) }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
