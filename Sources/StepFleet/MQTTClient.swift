import CMosquitto
import Foundation
import Locking
import Timekeeping

/// libmosquitto through the CMosquitto shim: one connection, run by a network thread of its own that connects,
/// keeps alive and, whenever the connection fails or drops, tries again after the back-off (`Backoff`): from the
/// very first attempt, so a broker that is down at start (a board up before its network) is reached whenever it
/// comes. (libmosquitto's own `loop_start` does not retry an attempt started by `connect_async` that failed, and
/// its waits grow as squares; this thread does both as docs/fleet.md says.) Callbacks run on that thread; the
/// owner hops to its own queue at once.
///
/// `@unchecked Sendable`: the libmosquitto handle is set in `init` and freed in `deinit`; libmosquitto locks its
/// own state for calls from the owner's queue and the network thread; `stopRequested` is behind `wake`, and
/// `sessionUp` belongs to the network thread (set by the connect callback, which runs there).
// unchecked: the handle is locked by libmosquitto itself, `stopRequested` by `wake`, `sessionUp` is the network thread's.
final class MQTTClient: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case create
        case library(String)
        case setting(String, reason: String)

        var description: String {
            switch self {
            case .create: return "cannot create an MQTT client (out of memory)"
            case .library(let reason): return "cannot publish over MQTT: \(reason)"
            case .setting(let what, let reason): return "cannot set the MQTT \(what): \(reason)"
            }
        }
    }

    /// The waits between attempts: `first` seconds after a failure, then twice as long each time up to `longest`;
    /// back to `first` once a connection has been accepted (CONNACK).
    struct Backoff: Equatable, Sendable {
        var firstSeconds: Int
        var longestSeconds: Int

        /// The wait after the `failures`-th failure in a row (1: the first).
        func seconds(afterFailures failures: Int) -> Int {
            var wait = max(1, firstSeconds)
            for _ in 1..<max(1, failures) where wait < longestSeconds { wait *= 2 }
            return min(wait, longestSeconds)
        }
    }

    struct Callbacks: Sendable {
        var connected: @Sendable (_ connackCode: Int32) -> Void
        var disconnected: @Sendable (_ reason: Int32) -> Void
        var acknowledged: @Sendable (_ messageID: Int32) -> Void
        /// An attempt failed or the connection ended: why, in words, and the seconds until the next attempt.
        var waiting: @Sendable (_ reason: String, _ retrySeconds: Int) -> Void
        /// The daemon itself dropped the connection (MQTTRelay: a packet over the size limit): why, before `waiting`.
        var dropped: @Sendable (_ reason: String) -> Void = { _ in }
    }

    private var client: OpaquePointer?
    private let callbacks: Callbacks
    /// The back-off's timer and the stop's deadline.
    private let clock: any DaemonClock
    /// libmosquitto is loaded (not linked) by the first client: a daemon without MQTT never maps it nor its TLS
    /// libraries (docs/iio.md, "Memory").
    private static let libraryStatus: Int32 = cmosq_library_init()

    init(clientID: String, clock: any DaemonClock = SystemClock(), callbacks: Callbacks) throws {
        if Self.libraryStatus != cmosq_success() { throw Failure.library(Self.words(Self.libraryStatus)) }
        self.callbacks = callbacks
        self.clock = clock
        let context = Unmanaged.passUnretained(self).toOpaque()
        client = cmosq_new(clientID, context, { context, code in
            let client = MQTTClient.from(context)
            if code == 0 { client.sessionUp = true }
            client.callbacks.connected(code)
        }, { context, reason in
            MQTTClient.from(context).callbacks.disconnected(reason)
        }, { context, messageID in
            MQTTClient.from(context).callbacks.acknowledged(messageID)
        })
        if client == nil { throw Failure.create }
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTClient {
        Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue()
    }

    deinit { cmosq_destroy(client) }

    static func words(_ code: Int32) -> String { String(cString: cmosq_error_string(code)) }
    /// A CONNACK refusal's reason: "Connection Refused: not authorised." reads "not authorised".
    static func connackWords(_ code: Int32) -> String { refusalReason(String(cString: cmosq_connack_string(code))) }

    static func refusalReason(_ text: String) -> String {
        let prefix = "Connection Refused: "
        return clause(text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text)
    }

    private func check(_ code: Int32, _ what: String) throws {
        if code != cmosq_success() { throw Failure.setting(what, reason: Self.words(code)) }
    }

    func setWill(topic: String, payload: String) throws {
        try check(cmosq_set_will(client, topic, payload, 1, true), "last will")
    }

    func setCredentials(username: String, password: String?) throws {
        try check(cmosq_set_credentials(client, username, password), "user name and password")
    }

    /// TLS (mqtts://): the authorities, certificate and key are loaded now, so that a file OpenSSL cannot read
    /// stops the start with its reason; the relay speaks TLS with the broker (MQTTRelay).
    func setTLS(caFile: String?, certFile: String?, keyFile: String?) throws {
        do { tls = try MQTTTLSContext(caFile: caFile, certFile: certFile, keyFile: keyFile) } catch {
            throw Failure.setting("TLS files", reason: error.description)
        }
    }

    /// The TLS settings of an mqtts:// broker; nil for mqtt://.
    private var tls: MQTTTLSContext?
    /// The most a packet from the broker may declare (MQTTRelay).
    var maximumIncomingPacketBytes = MQTTPacketSizeGuard.defaultLimitBytes

    /// Starts the network thread, which makes the first attempt at once. A broker that is down, or a name that
    /// does not resolve yet, is not an error: the thread tries again after the back-off until `stop`.
    func start(host: String, port: Int, keepaliveSeconds: Int, backoff: Backoff) {
        cmosq_set_threaded(client)
        let thread = Thread { [self] in
            ThreadName.setForCurrentThread("stepd.mqtt.net")
            run(host: host, port: Int32(port), keepaliveSeconds: Int32(keepaliveSeconds), backoff: backoff)
            finished.signal()
        }
        thread.start()
        running = true
    }

    /// Sends DISCONNECT when connected (what was published before it goes first) and ends the network thread,
    /// waiting for it at most `stopSeconds` (a broker that does not read): a stop never hangs the daemon.
    func stop() {
        wake.withLock {
            stopRequested = true
            wake.broadcast()
        }
        _ = cmosq_disconnect(client)
        guard running else { return }
        if finished.wait(timeout: SystemClock.dispatchDeadline(after: Self.stopSeconds)) == .success { running = false }
    }

    static let stopSeconds = 2.0
    /// How long one pass of libmosquitto's loop may wait for the socket while connected. libmosquitto shortens
    /// the wait to its next keepalive PINGREQ, and a message handed over (`publish`, `stop`'s DISCONNECT) wakes
    /// it through the client's own socket pair, so a quiet connection wakes the thread once per keepalive
    /// rather than once a second (docs/architecture.md, "Timers").
    private static func loopMilliseconds(keepaliveSeconds: Int32) -> Int32 { max(1, keepaliveSeconds) * 1000 }
    /// While stopping, so that a peer that reads nothing is given up after `stopSeconds`.
    private static let stoppingLoopMilliseconds: Int32 = 100

    private let wake = NSCondition()
    private var stopRequested = false
    /// The back-off's timer has fired: the next attempt is due. Behind `wake`.
    private var retryDue = false
    private let finished = DispatchSemaphore(value: 0)
    private var running = false
    /// Whether the current connection got its CONNACK; the network thread's.
    private var sessionUp = false

    private var stopping: Bool { wake.withLock { stopRequested } }

    /// The network thread: attempt, run the connection until it ends, wait, again.
    private func run(host: String, port: Int32, keepaliveSeconds: Int32, backoff: Backoff) {
        var failures = 0
        var stopDeadline: Double?
        while !stopping {
            var errorNumber: Int32 = 0
            sessionUp = false
            var code = cmosq_connect_async(client, host, port, keepaliveSeconds, &errorNumber)
            // Every byte from the broker passes the packet-size guard before libmosquitto reads it; over TLS the
            // relay is the TLS client, and without it libmosquitto's plain MQTT must not reach the broker.
            let relay = code == cmosq_success()
                ? MQTTRelay(libraryDescriptor: cmosq_socket(client), limitBytes: maximumIncomingPacketBytes, host: host, tls: tls) : nil
            var relayMissing: String?
            if code == cmosq_success(), relay == nil, tls != nil {
                relayMissing = "cannot relay the TLS connection: \(String(cString: strerror(errno)))"
                _ = shutdown(cmosq_socket(client), Int32(SHUT_RDWR))
            }
            if code == cmosq_success() {
                repeat {
                    let wait = stopping ? Self.stoppingLoopMilliseconds : Self.loopMilliseconds(keepaliveSeconds: keepaliveSeconds)
                    code = cmosq_loop(client, wait, &errorNumber)
                    if sessionUp { failures = 0 }
                    // Stopping: the loop writes what is queued and the DISCONNECT, then ends; a peer that does not
                    // read gets `stopSeconds`.
                    if stopping {
                        if !sessionUp { return }
                        if stopDeadline == nil { stopDeadline = clock.monotonicSeconds + Self.stopSeconds }
                        if let stopDeadline, clock.monotonicSeconds > stopDeadline { return }
                    }
                } while code == cmosq_success()
            }
            if stopping { return }
            failures += 1
            let wait = backoff.seconds(afterFailures: failures)
            let ending = relay?.ending
            if case .dropped(let reason) = ending { callbacks.dropped(Self.clause(reason)) }
            // The timer is set before the owner hears of the wait, so that whoever acts on the news (a test moving
            // its clock) finds it set.
            let wake = self.wake
            let retry = clock.run(after: Double(wait), on: .global(qos: .utility)) { [weak self] in
                wake.withLock {
                    self?.retryDue = true
                    wake.broadcast()
                }
            }
            callbacks.waiting(ending.map { Self.clause($0.reason) } ?? relayMissing ?? Self.failureWords(code, errorNumber), wait)
            wake.withLock {
                while !stopRequested, !retryDue { wake.wait() }
                retryDue = false
            }
            retry.cancel()
        }
    }

    /// libmosquitto's words as a clause: "connection refused", "the connection was lost".
    static func failureWords(_ code: Int32, _ errorNumber: Int32) -> String {
        clause(String(cString: cmosq_failure_string(code, errorNumber)))
    }

    /// "Connection refused." as it reads inside a sentence: "connection refused".
    static func clause(_ text: String) -> String {
        var text = text.trimmingCharacters(in: .whitespaces)
        while text.hasSuffix(".") { text.removeLast() }
        guard let first = text.first, text.dropFirst().first?.isLowercase ?? false else { return text }
        return first.lowercased() + text.dropFirst()
    }

    /// Hands a message to the network thread; the message id its PUBACK will carry, or the reason it could not.
    func publish(topic: String, payload: String, qos: Int32, retain: Bool) -> Result<Int32, PublishError> {
        var messageID: Int32 = 0
        let bytes = Array(payload.utf8)
        let code = cmosq_publish(client, topic, bytes, Int32(bytes.count), qos, retain, &messageID)
        return code == cmosq_success() ? .success(messageID) : .failure(PublishError(reason: Self.words(code)))
    }

    struct PublishError: Error { var reason: String }
}
