import CLibSSL
#if canImport(Glibc)
import Glibc
#endif

/// The TLS settings of an `mqtts://` broker, loaded once at start: the certificate authorities to trust
/// (`mqtt_ca_file`, else the system's) and the client certificate with its key. The relay (MQTTRelay) speaks TLS
/// with the broker through it, so that what the broker sends is plain MQTT again where the packet-size guard
/// reads it; libmosquitto then speaks plain MQTT to the relay. The checks are those libmosquitto made when it
/// did TLS itself: the chain up to a trusted authority, and the certificate made out to the broker's host name
/// or IP address as written in `mqtt_url`.
// unchecked: the context is only read after `init` (OpenSSL makes connections from it on any thread).
final class MQTTTLSContext: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case library(String)
        case create
        case authorities(caFile: String?, reason: String)
        case certificate(certFile: String, keyFile: String, reason: String)

        var description: String {
            switch self {
            case .library(let reason): return reason
            case .create: return "cannot create a TLS context (out of memory)"
            case .authorities(let caFile?, let reason): return "\(caFile) holds no certificate authority OpenSSL can read (\(reason))"
            case .authorities(nil, let reason): return "cannot load the system's certificate authorities (\(reason))"
            case .certificate(let certFile, let keyFile, let reason):
                return "\(certFile) and \(keyFile) are not a certificate and its private key (\(reason))"
            }
        }
    }

    fileprivate let handle: OpaquePointer
    /// The authorities trusted, for messages: the file, or nil for the system's.
    let caFile: String?

    init(caFile: String?, certFile: String?, keyFile: String?) throws(Failure) {
        if clibssl_library_init() != 0 { throw .library(String(cString: clibssl_load_failure())) }
        guard let handle = clibssl_context_new() else { throw .create }
        self.handle = handle
        self.caFile = caFile
        if clibssl_context_trust(handle, caFile) != 1 {
            throw .authorities(caFile: caFile, reason: Self.openSSLWords(or: "no certificate found"))
        }
        if let certFile, let keyFile, clibssl_context_use_certificate(handle, certFile, keyFile) != 1 {
            throw .certificate(certFile: certFile, keyFile: keyFile, reason: Self.openSSLWords(or: "unreadable"))
        }
    }

    deinit { clibssl_context_free(handle) }

    /// The oldest error OpenSSL queued on this thread, in words.
    static func openSSLWords(or fallback: String) -> String {
        var text = [CChar](repeating: 0, count: 256)
        clibssl_failure(&text, text.count)
        let words = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return words.isEmpty ? fallback : words
    }
}

/// One TLS session with the broker over the relay's socket; used by the relay's thread alone.
final class MQTTTLSSession {
    /// What one call did.
    enum Step: Equatable {
        case done(bytes: Int)
        /// Call again once the socket has these poll events (POLLIN or POLLOUT).
        case wait(events: Int16)
        /// The broker ended the session (close_notify).
        case closed
        case failed(String)
    }

    private let connection: OpaquePointer
    private let context: MQTTTLSContext
    private let host: String

    /// A session over `descriptor` (not taken over) that accepts only a certificate for `host`; nil when
    /// OpenSSL cannot make one (out of memory).
    init?(context: MQTTTLSContext, descriptor: Int32, host: String) {
        guard let connection = clibssl_connection_new(context.handle, descriptor) else { return nil }
        self.connection = connection
        self.context = context
        self.host = host
        // An address is checked against the certificate's IP entries; a name against its DNS entries, and sent
        // as SNI (RFC 6066 sends no address there).
        let expected = Self.isIPAddress(host)
            ? clibssl_expect_ip_address(connection, host) : clibssl_expect_host_name(connection, host)
        if expected != 1 { return nil }
    }

    deinit { clibssl_connection_free(connection) }

    static func isIPAddress(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
    }

    func handshake() -> Step {
        let result = clibssl_handshake(connection)
        return result == Int32(CLIBSSL_FAILED) ? .failed(handshakeFailure()) : step(result, bytes: 0)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Step {
        var bytes: Int32 = 0
        let result = clibssl_read(connection, buffer.baseAddress, Int32(clamping: buffer.count), &bytes)
        return step(result, bytes: Int(bytes))
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> Step {
        var bytes: Int32 = 0
        let result = clibssl_write(connection, buffer.baseAddress, Int32(clamping: buffer.count), &bytes)
        return step(result, bytes: Int(bytes))
    }

    /// Sends close_notify; the relay closes the socket next.
    func shutdown() { clibssl_shutdown(connection) }

    private func step(_ result: Int32, bytes: Int) -> Step {
        switch result {
        case Int32(CLIBSSL_DONE): return .done(bytes: bytes)
        case Int32(CLIBSSL_WANT_READ): return .wait(events: Int16(POLLIN))
        case Int32(CLIBSSL_WANT_WRITE): return .wait(events: Int16(POLLOUT))
        case Int32(CLIBSSL_CLOSED): return .closed
        default: return .failed("TLS with the broker failed: \(MQTTTLSContext.openSSLWords(or: "the connection broke"))")
        }
    }

    /// Why the handshake failed, as a person can act on it: which check the certificate did not pass, and
    /// against what.
    private func handshakeFailure() -> String {
        let verify = clibssl_verify_result(connection)
        let reason = MQTTTLSContext.openSSLWords(or: "the broker closed the connection")
        guard verify != 0 else { return "the TLS handshake with the broker failed: \(reason)" }
        let words = String(cString: clibssl_verify_words(verify))
        if verify == clibssl_verify_hostname_mismatch() || verify == clibssl_verify_ip_address_mismatch() {
            return "the broker's certificate is not made out to \(host) (\(words))"
        }
        let trusted = context.caFile.map { "the certificate authority in \($0)" } ?? "the system's certificate authorities"
        return "the broker's certificate is not trusted: \(words) (checked against \(trusted))"
    }
}
