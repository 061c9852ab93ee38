/// Why an address for gpsd was refused.
public enum GPSDAddressError: Error, Equatable, CustomStringConvertible {
    /// `text` as given, and what is wrong with it.
    case malformed(String, reason: String)

    public var reason: String {
        switch self {
        case .malformed(_, let reason): return reason
        }
    }

    public var description: String {
        switch self {
        case .malformed(let text, let reason):
            let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
            return "gpsd address \"\(shown)\" is not HOST:PORT (e.g. localhost:2947): \(reason)"
        }
    }
}

/// gpsd's address, `HOST:PORT` (IPv6 hosts in brackets). The port may be left out (2947).
///
/// Checked whole when read, so that a typo is refused at start with its line, not tried for ever by the
/// GPS source: a host is a name or an IPv4 address (letters, digits, `.`, `-`, `_`; at most 253 bytes, DNS's
/// limit), or an IPv6 address in brackets (`[::1]`, `[fe80::1%eth0]`); a colon outside brackets separates the
/// port, so only one may appear there; the port is a whole number from 1 to 65535 in plain digits.
public struct GPSDAddress: Sendable, Equatable, CustomStringConvertible {
    public static let defaultPort = "2947"
    /// The longest host name DNS allows (RFC 1035, 2.3.4: 255 bytes on the wire, 253 written).
    public static let maximumHostBytes = 253
    public var host: String
    public var port: String

    public init(host: String = "localhost", port: String = GPSDAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws {
        func refuse(_ reason: String) -> GPSDAddressError { .malformed(text, reason: reason) }
        guard !text.isEmpty else { throw refuse("it is empty") }
        var host: Substring
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw refuse("no ] closes the IPv6 address") }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw refuse("after ] comes :PORT or nothing, not \"\(rest.prefix(20))\"") }
                port = rest.dropFirst()
            }
            try Self.checkIPv6(host, refuse)
        } else {
            guard !text.contains("["), !text.contains("]") else { throw refuse("brackets go around an IPv6 address, as in [::1]:2947") }
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw refuse("more than one colon: an IPv6 address goes in brackets, as in [::1]:2947") }
            host = parts[0]
            port = parts.count == 2 ? parts[1] : nil
            try Self.checkName(host, refuse)
        }
        var portText = GPSDAddress.defaultPort
        if let port {
            guard !port.isEmpty else { throw refuse("the port after the colon is missing") }
            guard port.count <= 5, port.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(port),
                  (1...65535).contains(number) else {
                throw refuse("the port must be a whole number from 1 to 65535")
            }
            portText = String(number)
        }
        self.init(host: String(host), port: portText)
    }

    private static func checkName(_ host: Substring, _ refuse: (String) -> GPSDAddressError) throws {
        guard !host.isEmpty else { throw refuse("the host before the colon is missing") }
        guard host.utf8.count <= maximumHostBytes else { throw refuse("a host name has at most \(maximumHostBytes) bytes") }
        let allowed = host.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 46 || byte == 95
        }
        guard allowed else { throw refuse("a host is a name or an address of letters, digits, '.', '-' and '_'") }
    }

    private static func checkIPv6(_ host: Substring, _ refuse: (String) -> GPSDAddressError) throws {
        // An address, then an optional zone (`%eth0`) for a link-local one.
        let parts = host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        let address = parts[0]
        let hex = address.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte) || byte == 58 || byte == 46
        }
        guard address.contains(":"), hex, address.utf8.count <= 45 else {
            throw refuse("inside brackets goes an IPv6 address, as in [::1]")
        }
        if parts.count == 2 {
            let zone = parts[1]
            guard !zone.isEmpty, zone.utf8.count <= 15, zone.utf8.allSatisfy({ byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 46 || byte == 95
            }) else { throw refuse("the zone after % is an interface name, as in [fe80::1%eth0]") }
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
