import Dispatch
import Foundation
import Locking
import Logging
import NIOConcurrencyHelpers
import StepEngine
import StepProcessing
import StepProtocol
import StepStore
import Timekeeping

/// Publishes this device to an MQTT broker (docs/fleet.md): retained `status`, `steps` and `position`, and
/// the durable record (finished minute bins, visits) through the outbox in the history database.
///
/// Its state belongs to the serial queue `stepd.mqtt`: engine events (from the processing queue), store
/// results (from the store's queue) and libmosquitto's callbacks (from its network thread) only hop onto it.
/// Nothing here runs on the processing queue or the server's event loop, and nothing blocks them.
///
/// Sendable by construction: what the queue owns is in `core` (FleetCore, in a `Locked` value taken only on `queue`);
/// `status` is behind a lock of its own.
public final class FleetPublisher: Sendable {
    /// While walking, STEPS goes out at most this often (and once more when the walk ends).
    static let stepsIntervalSeconds = 5.0
    /// A receiver gives a fix a second; a subscriber needs far fewer.
    static let positionIntervalSeconds = 10.0
    /// Outbox messages waiting for their PUBACK at once.
    static let windowCapacity = 20
    /// The waits between connection attempts, from the first one at start: from 1 s (a broker restarted is back
    /// within seconds), doubling to 30 s (one gone for the day costs the board a wake-up every 30 s).
    static let backoff = MQTTClient.Backoff(firstSeconds: 1, longestSeconds: 30)
    /// A store that cannot take the outbox now is asked again this much later.
    static let storeRetrySeconds = 5.0
    /// A clean stop waits this long for the store's minutes not yet finished, then as long for the broker to
    /// acknowledge the last messages; with MQTTClient.stopSeconds for the DISCONNECT, within the MQTT part's budget
    /// (RunCommand).
    static let finalStoreSeconds = 1.0
    static let finalAcknowledgementSeconds = 1.5

    public let configuration: FleetConfiguration
    /// The engine's: throttles, the seal timer, the broker's back-off.
    let clock: any DaemonClock
    let topics: FleetTopics
    private let engine: Engine
    private let store: StepStore
    private let logger: Logger
    let queue: DispatchQueue
    private let core: Locked<FleetCore>
    private let published: NIOLockedValueBox<MQTTStatusMessage>

    public init(configuration: FleetConfiguration, store: StepStore, engine: Engine,
                logger: Logger = Logger(label: "stepd.mqtt")) {
        self.configuration = configuration
        clock = engine.clock
        let topics = FleetTopics(prefix: configuration.topicPrefix)
        self.topics = topics
        self.engine = engine
        self.store = store
        self.logger = logger
        let published = NIOLockedValueBox(MQTTStatusMessage(state: "connecting", error: nil, broker: configuration.broker.description,
                                                            device_id: configuration.deviceID, topic_prefix: topics.prefix,
                                                            queued: 0, last_ack: nil))
        self.published = published
        let queue = DispatchQueue(label: "stepd.mqtt", qos: .utility)
        self.queue = queue
        core = Locked(FleetCore(configuration: configuration, topics: topics, engine: engine, store: store, logger: logger,
                               queue: queue, published: published))
    }

    /// STATUS's `mqtt` object; cheap, safe from any thread.
    public var status: MQTTStatusMessage { published.withLockedValue { $0 } }

    /// Runs `body` with what the queue owns; on the queue.
    func onQueue<R: Sendable>(_ body: (FleetCore) -> R) -> R {
        dispatchPrecondition(condition: .onQueue(queue))
        return core.withLock { body($0) }
    }

    /// Runs `body` on the queue with what it owns: at once (from another queue or thread), or `seconds` later.
    func hop(after seconds: Double? = nil, _ body: @escaping @Sendable (FleetCore) -> Void) {
        guard let seconds else { return queue.async { [self] in onQueue(body) } }
        clock.run(after: seconds, on: queue) { [self] in onQueue(body) }
    }

    // MARK: Life cycle

    /// Sets the client up and starts its network thread; a broker that is down is not an error (the thread
    /// keeps trying), settings libmosquitto refuses (a TLS file it cannot load) are.
    public func start() throws {
        let client = try MQTTClient(clientID: "stepd-\(configuration.deviceID)", clock: clock, callbacks: .init(
            connected: { [weak self] code in self?.hop { $0.connected(code) } },
            disconnected: { [weak self] reason in self?.hop { $0.disconnected(reason) } },
            acknowledged: { [weak self] id in self?.hop { $0.acknowledged(messageID: id) } },
            waiting: { [weak self] reason, seconds in self?.hop { $0.waiting(reason: reason, retrySeconds: seconds) } },
            dropped: { [weak self] reason in self?.hop { $0.dropped(reason) } }))
        try client.setWill(topic: topics.status, payload: FleetPayloads.offline)
        if let username = configuration.username {
            try client.setCredentials(username: username, password: configuration.password)
        }
        if configuration.broker.tls {
            try client.setTLS(caFile: configuration.caFile, certFile: configuration.certFile, keyFile: configuration.keyFile)
        }
        queue.sync {
            onQueue { core in
                core.owner = self
                core.client = client
            }
        }
        queue.sync { onQueue { $0.startOutbox() } }
        client.start(host: configuration.broker.host, port: configuration.broker.port,
                     keepaliveSeconds: configuration.keepaliveSeconds, backoff: Self.backoff)
        logger.debug("mqtt: connecting to \(configuration.broker) as \(topics.prefix)")
    }

    /// A clean stop delivers: once the sources have stopped and the engine has counted what they sent, the
    /// retained STEPS with the count the store is about to save, the minutes not yet finished as they stand
    /// (`partial`), and `offline` in place of the last will; then, once the broker has acknowledged them (or
    /// `finalAcknowledgementSeconds` later), DISCONNECT. Called before the store closes; outbox rows not
    /// acknowledged stay there for the next run.
    public func stop() {
        engine.drain()
        let connected = queue.sync { onQueue { $0.beginStop() } }
        let partial = NIOLockedValueBox<[(key: String, payload: String)]>([])
        if connected {
            let read = DispatchSemaphore(value: 0)
            store.unfinishedMinutes(encoder: .partialPayloads(device: configuration.deviceID)) { result in
                if case .success(let minutes) = result { partial.withLockedValue { $0 = minutes } }
                read.signal()
            }
            if read.wait(timeout: SystemClock.dispatchDeadline(after: Self.finalStoreSeconds)) == .timedOut {
                logger.notice("mqtt: the store did not give the minutes in progress within \(Self.finalStoreSeconds) s: they go out finished after the next start")
            }
        }
        let delivered = DispatchSemaphore(value: 0)
        let snapshot = engine.snapshot
        let minutes = partial.withLockedValue { $0 }
        let client = queue.sync {
            onQueue { $0.publishFinal(snapshot, partialMinutes: minutes, acknowledged: { delivered.signal() }) }
        }
        if delivered.wait(timeout: SystemClock.dispatchDeadline(after: Self.finalAcknowledgementSeconds)) == .timedOut {
            logger.notice("mqtt: the broker did not acknowledge the last messages within \(Self.finalAcknowledgementSeconds) s")
        }
        client?.stop()
    }

}

/// The engine's events, hopping from the processing queue to the publisher's. The daemon registers the publisher
/// with the engine once it has started (`Engine.register`), after the store's recorder.
extension FleetPublisher: EngineObserver {
    public func engine(_ engine: Engine, emitted event: EngineEvent) {
        switch event {
            case .pedometer(let snapshot):
                hop { $0.stepsChanged(snapshot) }
            case .location(.position(let fix)):
                hop { $0.positionChanged(fix) }
            case .location(.visit):
                // The store has the visit already (the engine records it before it tells its listeners); sealing
                // now takes it from there into the outbox rather than at the next minute.
                hop { $0.visitRecorded() }
            case .bout:
                // Recorded by the store already (EngineRecording listens first): sealed now, as a visit.
                hop { $0.visitRecorded() }
            case .reset:
                let snapshot = engine.snapshot
                hop { $0.publishSteps(snapshot, forced: true) }
            default:
                break
            }
    }
}
