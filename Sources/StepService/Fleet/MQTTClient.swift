import CMosquitto
import Foundation

/// libmosquitto through the CMosquitto shim: one connection with its own network thread (libmosquitto's
/// `loop_start`), which connects, keeps alive and reconnects by itself. Callbacks run on that thread; the
/// owner hops to its own queue at once.
///
/// `@unchecked Sendable`: its only state, the libmosquitto handle, is set in `init` and freed in `deinit`;
/// libmosquitto locks its own state for calls from the owner's queue and its network thread.
final class MQTTClient: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case create
        case setting(String, reason: String)
        case start(broker: String, reason: String)

        var description: String {
            switch self {
            case .create: return "cannot create an MQTT client (out of memory)"
            case .setting(let what, let reason): return "cannot set the MQTT \(what): \(reason)"
            case .start(let broker, let reason): return "cannot start the MQTT client for \(broker): \(reason)"
            }
        }
    }

    struct Callbacks: Sendable {
        var connected: @Sendable (_ connackCode: Int32) -> Void
        var disconnected: @Sendable (_ reason: Int32) -> Void
        var acknowledged: @Sendable (_ messageID: Int32) -> Void
    }

    private var client: OpaquePointer?
    private let callbacks: Callbacks
    private static let libraryReady: Bool = { cmosq_library_init() == cmosq_success() }()

    init(clientID: String, callbacks: Callbacks) throws {
        _ = Self.libraryReady
        self.callbacks = callbacks
        let context = Unmanaged.passUnretained(self).toOpaque()
        client = cmosq_new(clientID, context, { context, code in
            MQTTClient.from(context).callbacks.connected(code)
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
    static func connackWords(_ code: Int32) -> String { String(cString: cmosq_connack_string(code)) }

    private func check(_ code: Int32, _ what: String) throws {
        if code != cmosq_success() { throw Failure.setting(what, reason: Self.words(code)) }
    }

    func setWill(topic: String, payload: String) throws {
        try check(cmosq_set_will(client, topic, payload, 1, true), "last will")
    }

    func setCredentials(username: String, password: String?) throws {
        try check(cmosq_set_credentials(client, username, password), "user name and password")
    }

    func setTLS(caFile: String?, certFile: String?, keyFile: String?) throws {
        try check(cmosq_set_tls(client, caFile, certFile, keyFile), "TLS files")
    }

    func setReconnectDelay(firstSeconds: UInt32, longestSeconds: UInt32) throws {
        try check(cmosq_set_reconnect_delay(client, firstSeconds, longestSeconds), "reconnect delay")
    }

    func start(host: String, port: Int, keepaliveSeconds: Int, broker: String) throws {
        let code = cmosq_start(client, host, Int32(port), Int32(keepaliveSeconds))
        if code != cmosq_success() { throw Failure.start(broker: broker, reason: Self.words(code)) }
    }

    func stop() { cmosq_stop(client) }

    /// Hands a message to the network thread; the message id its PUBACK will carry, or the reason it could not.
    func publish(topic: String, payload: String, qos: Int32, retain: Bool) -> Result<Int32, PublishError> {
        var messageID: Int32 = 0
        let bytes = Array(payload.utf8)
        let code = cmosq_publish(client, topic, bytes, Int32(bytes.count), qos, retain, &messageID)
        return code == cmosq_success() ? .success(messageID) : .failure(PublishError(reason: Self.words(code)))
    }

    struct PublishError: Error { var reason: String }
}
