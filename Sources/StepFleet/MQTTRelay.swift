import Foundation
import Locking
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// Stands between libmosquitto and a plain (not TLS) broker connection, so that every byte from the broker is
/// read by MQTTPacketSizeGuard before libmosquitto sees it. libmosquitto's socket is swapped for one end of a
/// socket pair right after it starts connecting; the relay's thread holds the broker's TCP socket and copies
/// both ways, a bounded buffer each way. A packet over the limit ends the connection (both sockets closed):
/// libmosquitto finds it lost and the network thread connects again after the back-off, as after any drop.
/// Over TLS the bytes are ciphertext, so the relay is not used there (docs/fleet.md).
// unchecked: `failure` is behind its lock; the sockets and buffers belong to the relay's thread.
final class MQTTRelay: @unchecked Sendable {
    /// The most held each way: libmosquitto and the broker are read only while their buffer has room.
    static let bufferBytes = 64 * 1024

    private let broker: Int32
    private let library: Int32
    private var sizeGuard: MQTTPacketSizeGuard
    private let lock = NSLock()
    private var failureText: String?
    private let finished = DispatchSemaphore(value: 0)

    /// Why the relay ended the connection (a packet over the limit, the broker's connect failing), if it did.
    var failure: String? { lock.withLock { failureText } }

    /// Takes over `libraryDescriptor` (libmosquitto's socket, connecting or connected): nil, and the connection
    /// left as it is, when the socket pair cannot be made.
    init?(libraryDescriptor: Int32, limitBytes: Int) {
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

    private func fail(_ text: String) {
        lock.withLock { if failureText == nil { failureText = text } }
    }

    private func run() {
        var toLibrary: [UInt8] = [], toBroker: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var brokerConnected = false
        var libraryClosed = false
        while true {
            var fds = [pollfd(fd: broker, events: 0, revents: 0), pollfd(fd: library, events: 0, revents: 0)]
            if !brokerConnected || !toBroker.isEmpty { fds[0].events |= Int16(POLLOUT) }
            if brokerConnected && toLibrary.count < Self.bufferBytes { fds[0].events |= Int16(POLLIN) }
            if !toLibrary.isEmpty { fds[1].events |= Int16(POLLOUT) }
            if !libraryClosed && toBroker.count < Self.bufferBytes { fds[1].events |= Int16(POLLIN) }
            // libmosquitto closed its end and what it wrote last (its DISCONNECT) is out: done.
            if libraryClosed && toBroker.isEmpty { return }
            let ready = poll(&fds, 2, libraryClosed ? 2000 : -1)
            if ready < 0 { if errno == EINTR { continue } else { return } }
            if ready == 0 { return }  // a broker that takes nothing of the last bytes for 2 s
            if !brokerConnected, fds[0].revents != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(broker, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    fail(String(cString: strerror(error)))
                    return
                }
                brokerConnected = true
            }
            // From the broker: through the guard, then to libmosquitto.
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, brokerConnected, toLibrary.count < Self.bufferBytes {
                let n = chunk.withUnsafeMutableBytes { recv(broker, $0.baseAddress, min($0.count, Self.bufferBytes - toLibrary.count), 0) }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
                    flush(toLibrary, to: library)
                    return
                }
                if n > 0 {
                    let verdict = chunk.withUnsafeBytes { sizeGuard.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                    switch verdict {
                    case .pass:
                        toLibrary += chunk[0..<n]
                    case .tooLarge(let type, let declared):
                        fail("the broker sent a packet (type \(type)) of \(declared) bytes, more than the "
                             + "\(sizeGuard.limitBytes) bytes a publisher accepts; dropped the connection")
                        return
                    case .malformed:
                        fail("the broker sent a packet whose length is not MQTT; dropped the connection")
                        return
                    }
                }
            }
            // From libmosquitto: to the broker.
            if fds[1].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !libraryClosed {
                let n = chunk.withUnsafeMutableBytes { recv(library, $0.baseAddress, min($0.count, Self.bufferBytes - toBroker.count), 0) }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { libraryClosed = true }
                if n > 0 { toBroker += chunk[0..<n] }
            }
            if brokerConnected, !toBroker.isEmpty, fds[0].revents & Int16(POLLOUT) != 0 {
                let n = toBroker.withUnsafeBytes { send(broker, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { toBroker.removeFirst(n) } else if n < 0, errno != EAGAIN, errno != EINTR { return }
            }
            if !toLibrary.isEmpty, fds[1].revents & Int16(POLLOUT) != 0 {
                let n = toLibrary.withUnsafeBytes { send(library, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { toLibrary.removeFirst(n) } else if n < 0, errno != EAGAIN, errno != EINTR { return }
            }
        }
    }

    /// What the broker sent before it closed goes to libmosquitto if it takes it at once (a CONNACK's refusal).
    private func flush(_ bytes: [UInt8], to descriptor: Int32) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
