/// Where the broker is: `mqtt://HOST[:PORT]` (plain TCP, port 1883) or `mqtts://HOST[:PORT]` (TLS, port 8883),
/// IPv6 in brackets (`mqtt://[::1]:1883`), as Mosquitto's and most clients' URLs are written. Credentials
/// never go in the URL: the password has a file of its own (`mqtt_password_file`), which only the service reads.
public struct BrokerURL: Sendable, Equatable, CustomStringConvertible {
    public var tls: Bool
    public var host: String
    public var port: Int

    /// IANA's registered ports for MQTT and MQTT over TLS.
    public static let plainPort = 1883
    public static let tlsPort = 8883

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case scheme(String)
        case credentials(String)
        case host(String)
        case port(String)
        case path(String)

        public var description: String {
            switch self {
            case .scheme(let url): return "\"\(url)\" is not an MQTT broker URL: write mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"
            case .credentials(let url): return "\"\(url)\" holds a user or password: give them with --mqtt-username and --mqtt-password-file"
            case .host(let url): return "\"\(url)\" has no host"
            case .port(let url): return "\"\(url)\" has a port that is not a number from 1 to 65535"
            case .path(let url): return "\"\(url)\" has a path; an MQTT broker URL is only mqtt(s)://HOST[:PORT]"
            }
        }
    }

    public init(tls: Bool, host: String, port: Int) {
        self.tls = tls
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws(ParseError) {
        let rest: Substring
        if text.hasPrefix("mqtt://") {
            tls = false
            rest = text.dropFirst("mqtt://".count)
        } else if text.hasPrefix("mqtts://") {
            tls = true
            rest = text.dropFirst("mqtts://".count)
        } else {
            throw ParseError.scheme(text)
        }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.contains("/") else { throw ParseError.path(text) }
        guard !authority.contains("@") else { throw ParseError.credentials(text) }
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError.host(text) }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError.host(text) }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        guard !host.isEmpty, !host.contains(" ") else { throw ParseError.host(text) }
        if let portText {
            guard let port = Int(portText), (1...65_535).contains(port) else { throw ParseError.port(text) }
            self.port = port
        } else {
            port = tls ? Self.tlsPort : Self.plainPort
        }
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(tls ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }
}
