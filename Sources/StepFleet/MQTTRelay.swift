import Foundation
import Locking
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// Stands between libmosquitto and the broker's connection, so that every byte from the broker is read by
/// MQTTPacketSizeGuard before libmosquitto sees it. libmosquitto's socket is swapped for one end of a socket pair
/// right after it starts connecting; the relay's thread holds the broker's TCP socket and copies both ways, a
/// bounded buffer each way. With an `mqtts://` broker the relay is the TLS client (MQTTTLSSession, with the
/// checks libmosquitto made), so that the guard reads plain MQTT there too, and libmosquitto speaks plain MQTT
/// to the relay. A packet over the limit ends the connection (both sockets closed): libmosquitto finds it lost
/// and the network thread connects again after the back-off, as after any drop (docs/fleet.md).
// unchecked: `ending` is behind its lock; the sockets, buffers and TLS session belong to the relay's thread.
final class MQTTRelay: @unchecked Sendable {
    /// The most held each way: libmosquitto and the broker are read only while their buffer has room.
    static let bufferBytes = 64 * 1024

    /// Why the relay ended a connection.
    enum Ending: Equatable {
        /// The broker sent a packet over the limit, or one that is not MQTT: the daemon dropped the connection.
        case dropped(String)
        /// The connection or its TLS handshake failed (a certificate not trusted, not made out to the host).
        case failed(String)

        var reason: String {
            switch self {
            case .dropped(let reason), .failed(let reason): return reason
            }
        }
    }

    private let broker: Int32
    private let library: Int32
    private let host: String
    private let tlsContext: MQTTTLSContext?
    private var sizeGuard: MQTTPacketSizeGuard
    private let lock = NSLock()
    private var endingValue: Ending?
    private let finished = DispatchSemaphore(value: 0)

    /// Why the relay ended the connection, if it did (a broker that closed it is not the relay's doing).
    var ending: Ending? { lock.withLock { endingValue } }

    /// Takes over `libraryDescriptor` (libmosquitto's socket, connecting or connected to `host`): nil, and the
    /// connection left as it is, when the socket pair cannot be made. With `tls`, the relay is the TLS client.
    init?(libraryDescriptor: Int32, limitBytes: Int, host: String, tls: MQTTTLSContext?) {
        let broker = fcntl(libraryDescriptor, F_DUPFD_CLOEXEC, 0)
        guard broker >= 0 else { return nil }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            close(broker)
            return nil
        }
        // libmosquitto's descriptor now names its end of the pair, non-blocking as its socket was.
        guard dup2(pair[0], libraryDescriptor) >= 0 else {
            close(broker)
            close(pair[0])
            close(pair[1])
            return nil
        }
        close(pair[0])
        _ = fcntl(libraryDescriptor, F_SETFD, FD_CLOEXEC)  // dup2 does not carry it
        _ = fcntl(libraryDescriptor, F_SETFL, fcntl(libraryDescriptor, F_GETFL) | O_NONBLOCK)
        _ = fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK)
        _ = fcntl(broker, F_SETFL, fcntl(broker, F_GETFL) | O_NONBLOCK)
        self.broker = broker
        self.library = pair[1]
        self.host = host
        tlsContext = tls
        sizeGuard = MQTTPacketSizeGuard(limitBytes: limitBytes)
        let thread = Thread { [self] in
            ThreadName.setForCurrentThread("stepd.mqtt.relay")
            run()
            close(self.broker)
            close(self.library)
            finished.signal()
        }
        thread.start()
    }

    /// Waits for the relay's thread once libmosquitto has closed its end (the connection ended).
    func waitUntilFinished(seconds: Double) {
        _ = finished.wait(timeout: SystemClock.dispatchDeadline(after: seconds))
    }

    private func end(_ ending: Ending) {
        lock.withLock { if endingValue == nil { endingValue = ending } }
    }

    /// The broker's side: a plain socket or a TLS session over it; what a read or write did.
    private enum BrokerStep {
        case done(Int)
        case wait(Int16)
        case closed
        case failed(String)
    }

    private func run() {
        var toLibrary: [UInt8] = [], toBroker: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var brokerConnected = false
        var session: MQTTTLSSession?
        var handshaking = tlsContext != nil
        var libraryClosed = false
        // What the broker's socket must show before the next read, write or handshake step can go on: the
        // reads and writes are tried after every wake (TLS may hold decrypted bytes that poll does not show),
        // and poll waits for what the last try asked for.
        var readWaits = Int16(POLLIN), writeWaits = Int16(POLLOUT), handshakeWaits = Int16(POLLOUT)
        while true {
            // libmosquitto closed its end and what it wrote last (its DISCONNECT) is out: done. (Closed during
            // the handshake: nothing it wrote matters any more.)
            if libraryClosed && (toBroker.isEmpty || handshaking) {
                if !handshaking { session?.shutdown() }
                return
            }
            var fds = [pollfd(fd: broker, events: 0, revents: 0), pollfd(fd: library, events: 0, revents: 0)]
            if !brokerConnected { fds[0].events = Int16(POLLOUT) }
            else if handshaking { fds[0].events = handshakeWaits }
            else {
                if toLibrary.count < Self.bufferBytes { fds[0].events |= readWaits }
                if !toBroker.isEmpty { fds[0].events |= writeWaits }
            }
            if !toLibrary.isEmpty { fds[1].events |= Int16(POLLOUT) }
            if !libraryClosed && toBroker.count < Self.bufferBytes { fds[1].events |= Int16(POLLIN) }
            let ready = poll(&fds, 2, libraryClosed ? 2000 : -1)
            if ready < 0 { if errno == EINTR { continue } else { return } }
            if ready == 0 { return }  // a broker that takes nothing of the last bytes for 2 s
            if !brokerConnected, fds[0].revents != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(broker, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    end(.failed(String(cString: strerror(error))))
                    return
                }
                brokerConnected = true
                if let tlsContext {
                    guard let made = MQTTTLSSession(context: tlsContext, descriptor: broker, host: host) else {
                        end(.failed("cannot start TLS with the broker (out of memory)"))
                        return
                    }
                    session = made
                }
            }
            if brokerConnected, handshaking, let session {
                switch session.handshake() {
                case .done: handshaking = false
                case .wait(let events): handshakeWaits = events
                case .closed:
                    end(.failed("the TLS handshake with the broker failed: the broker closed the connection"))
                    return
                case .failed(let reason):
                    end(.failed(reason))
                    return
                }
            }
            // From the broker: through the guard, then to libmosquitto.
            while brokerConnected, !handshaking, toLibrary.count < Self.bufferBytes {
                let room = min(chunk.count, Self.bufferBytes - toLibrary.count)
                let step = chunk.withUnsafeMutableBytes { readBroker(UnsafeMutableRawBufferPointer(rebasing: $0[0..<room]), session) }
                guard case .done(let n) = step else {
                    if case .wait(let events) = step { readWaits = events; break }
                    if case .failed(let reason) = step { end(.failed(reason)) }
                    flush(toLibrary, to: library)
                    return
                }
                let verdict = chunk.withUnsafeBytes { sizeGuard.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                switch verdict {
                case .pass:
                    toLibrary += chunk[0..<n]
                case .tooLarge(let type, let declared):
                    end(.dropped("the broker sent a packet (type \(type)) of \(declared) bytes, more than the "
                                 + "\(sizeGuard.limitBytes) bytes a publisher accepts; dropped the connection"))
                    return
                case .malformed:
                    end(.dropped("the broker sent a packet whose length is not MQTT; dropped the connection"))
                    return
                }
            }
            // From libmosquitto: to the broker.
            if fds[1].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !libraryClosed {
                let n = chunk.withUnsafeMutableBytes { recv(library, $0.baseAddress, min($0.count, Self.bufferBytes - toBroker.count), 0) }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { libraryClosed = true }
                if n > 0 { toBroker += chunk[0..<n] }
            }
            while brokerConnected, !handshaking, !toBroker.isEmpty {
                let step = toBroker.withUnsafeBytes { writeBroker(UnsafeRawBufferPointer(rebasing: $0[0..<min($0.count, 16 * 1024)]), session) }
                guard case .done(let n) = step else {
                    if case .wait(let events) = step { writeWaits = events; break }
                    if case .failed(let reason) = step { end(.failed(reason)) }
                    return
                }
                toBroker.removeFirst(n)
            }
            if !toLibrary.isEmpty, fds[1].revents & Int16(POLLOUT) != 0 {
                let n = toLibrary.withUnsafeBytes { send(library, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { toLibrary.removeFirst(n) } else if n < 0, errno != EAGAIN, errno != EINTR { return }
            }
        }
    }

    private func readBroker(_ buffer: UnsafeMutableRawBufferPointer, _ session: MQTTTLSSession?) -> BrokerStep {
        if let session {
            switch session.read(into: buffer) {
            case .done(let bytes): return .done(bytes)
            case .wait(let events): return .wait(events)
            case .closed: return .closed
            case .failed(let reason): return .failed(reason)
            }
        }
        let n = recv(broker, buffer.baseAddress, buffer.count, 0)
        if n > 0 { return .done(n) }
        if n < 0, errno == EAGAIN || errno == EINTR { return .wait(Int16(POLLIN)) }
        return .closed
    }

    private func writeBroker(_ buffer: UnsafeRawBufferPointer, _ session: MQTTTLSSession?) -> BrokerStep {
        if let session {
            switch session.write(buffer) {
            case .done(let bytes): return .done(bytes)
            case .wait(let events): return .wait(events)
            case .closed: return .closed
            case .failed(let reason): return .failed(reason)
            }
        }
        let n = send(broker, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        if n > 0 { return .done(n) }
        if n < 0, errno == EAGAIN || errno == EINTR { return .wait(Int16(POLLOUT)) }
        return .closed
    }

    /// What the broker sent before it closed goes to libmosquitto if it takes it at once (a CONNACK's refusal).
    private func flush(_ bytes: [UInt8], to descriptor: Int32) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
