import Foundation
import Hummingbird
import Logging
import StepLogging

/// The host names stepd-web serves (docs/web.md, "Host names"). A page elsewhere whose name an attacker
/// rebinds to 127.0.0.1 (DNS rebinding) reaches stepd-web as a same-origin request with that name in `Host:`;
/// refusing names stepd-web does not know keeps such a page from reading the wearer's track and visits.
struct AllowedHosts: Sendable {
    /// Lower-case, without a trailing dot or an IPv6 literal's brackets.
    let names: Set<String>

    /// `listenHost`: --listen's host; `extra`: --allow-host's names; `machine`: gethostname()'s answer.
    init(listenHost: String, extra: [String], machine: String? = AllowedHosts.machineName()) {
        var names: Set<String> = ["localhost", "127.0.0.1", "::1"]
        names.insert(Self.normalised(listenHost))
        if let machine = machine.map(Self.normalised), !machine.isEmpty {
            // "board" and "board.local" (mDNS), and for a name given in full its first label as well.
            for name in [machine, String(machine.prefix { $0 != "." })] {
                names.insert(name)
                names.insert(name.hasSuffix(".local") ? name : name + ".local")
            }
        }
        for name in extra { names.insert(Self.normalised(name)) }
        self.names = names
    }

    /// Whether a request with this `Host:` value (its authority) is served. A name must be one of `names`; any
    /// IP address literal is served too, since rebinding needs a name that the attacker's DNS answers for. No
    /// `Host:` at all (HTTP/1.0) is served: every browser sends one, so such a request is no rebound page's.
    func allows(_ authority: String?) -> Bool {
        guard let authority else { return true }
        guard let host = Self.host(ofAuthority: authority) else { return false }
        return names.contains(host) || Self.isAddressLiteral(host)
    }

    /// The host of `name`, `name:port`, `[v6]` or `[v6]:port`, normalised; nil when it is none of these.
    static func host(ofAuthority authority: String) -> String? {
        var host = Substring(authority)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isASCIIDigit)) else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.firstIndex(of: ":") {
            guard host[host.index(after: colon)...].allSatisfy(\.isASCIIDigit) else { return nil }
            host = host[..<colon]
        }
        let name = normalised(String(host))
        return name.isEmpty ? nil : name
    }

    static func normalised(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    static func isAddressLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// An --allow-host value: a host name or address, without a port.
    static func check(option name: String) -> String? {
        let host = normalised(name)
        if host.isEmpty { return "--allow-host needs a host name, e.g. --allow-host board.example.net" }
        if isAddressLiteral(host) { return nil }
        let allowed = host.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "." || $0 == "_" }
        return allowed ? nil : "--allow-host takes a host name without a port, e.g. --allow-host board.example.net, not \"\(name)\""
    }

    /// This machine's name as gethostname(2) gives it.
    static func machineName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return nil }
        return String(cString: buffer)
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// Answers a request for a host name stepd-web does not serve with 421 Misdirected Request (RFC 9110 §15.5.20:
/// not a name this server answers for) before anything else sees it, the page's files included; and a request
/// with more than one `Host:` field with 400 (RFC 9112 §3.2), which could otherwise pass a second name on.
struct HostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowed: AllowedHosts
    /// Refusals, logged once per 10 s, so that whoever set up a name sees why its page does not load.
    let refusals: RateLimitedLog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The first Host is the request's authority; a second stays among the fields.
        if !request.headers[values: .init("Host")!].isEmpty {
            return failure(.badRequest, "more than one Host header")
        }
        guard allowed.allows(request.head.authority) else {
            let given = request.head.authority ?? ""
            let shown = given.count > 64 ? "\(given.prefix(64))..." : given
            let name = AllowedHosts.host(ofAuthority: given).flatMap { AllowedHosts.check(option: $0) == nil ? $0 : nil } ?? "NAME"
            refusals.log(.notice, cause: "host", "refused a request for host \"\(shown)\": not a name stepd-web serves (--allow-host)")
            return failure(.misdirectedRequest,
                           "stepd-web does not answer for the host \"\(shown)\": if that is this machine's name, "
                           + "start stepd-web with --allow-host \(name) (docs/web.md, \"Host names\")")
        }
        return try await next(request, context)
    }
}
