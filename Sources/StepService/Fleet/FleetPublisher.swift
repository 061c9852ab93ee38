import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import StepProcessing
import StepProtocol

/// Publishes this device to an MQTT broker (docs/fleet.md): retained `status`, `steps` and `position`, and
/// the durable record (finished minute bins, visits) through the outbox in the history database.
///
/// Its state belongs to the serial queue `stepd.mqtt`: engine events (from the processing queue), store
/// results (from the store's queue) and libmosquitto's callbacks (from its network thread) only hop onto it.
/// Nothing here runs on the processing queue or the server's event loop, and nothing blocks them.
///
/// `@unchecked Sendable`: its mutable state is owned by `queue` (checked with dispatchPrecondition at each
/// entry); `status` is behind a lock and the rest is set once before `start` returns.
public final class FleetPublisher: @unchecked Sendable {
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

    public let configuration: FleetConfiguration
    let topics: FleetTopics
    private let finishedMinutes: FinishedMinutes
    private let store: StepStore
    private let engine: Engine
    private let logger: Logger
    let queue = DispatchQueue(label: "stepd.mqtt", qos: .utility)
    private var client: MQTTClient?

    // Owned by `queue`.
    /// `connecting` until the first connection (with why the last attempt failed, once one has), then
    /// `connected` or `disconnected` with why.
    private enum LinkState: Equatable { case connecting(String?), connected, disconnected(String) }
    private var link = LinkState.connecting(nil)
    /// The broker's refusal of the last attempt (a CONNACK with a code), said instead of libmosquitto's words.
    private var refusal: String?
    /// How the connection was lost, said once with the first wait after it.
    private var loss: String?
    private var stopping = false
    private var window = OutboxWindow(capacity: windowCapacity)
    /// Acknowledged rows not yet removed from the store, and whether a removal is under way.
    private var acknowledged: [Int64] = []
    private var removing: Set<Int64> = []
    private var queued = 0
    private var lastAck: Date?
    private var stepsThrottle = PublishThrottle(intervalSeconds: stepsIntervalSeconds)
    private var positionThrottle = PublishThrottle(intervalSeconds: positionIntervalSeconds)
    private var latestPosition: Fix?
    private var sealTimer: DispatchSourceTimer?
    private var outboxReady = false
    /// Whether the discovery last published declared a floors sensor; nil before it was published on this connection.
    private var declaredBarometer: Bool?

    private let published: NIOLockedValueBox<MQTTStatusMessage>

    public init(configuration: FleetConfiguration, store: StepStore, engine: Engine,
                logger: Logger = Logger(label: "stepd.mqtt")) {
        self.configuration = configuration
        topics = FleetTopics(prefix: configuration.topicPrefix)
        self.store = store
        finishedMinutes = FinishedMinutes(holdBackSeconds: store.configuration.stepHoldBackSeconds)
        self.engine = engine
        self.logger = logger
        published = NIOLockedValueBox(MQTTStatusMessage(state: "connecting", error: nil, broker: configuration.broker.description,
                                                        device_id: configuration.deviceID, topic_prefix: topics.prefix,
                                                        queued: 0, last_ack: nil))
    }

    /// STATUS's `mqtt` object; cheap, safe from any thread.
    public var status: MQTTStatusMessage { published.withLockedValue { $0 } }

    private static var monotonicSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    // MARK: Life cycle

    /// Sets the client up and starts its network thread; a broker that is down is not an error (the thread
    /// keeps trying), settings libmosquitto refuses (a TLS file it cannot load) are.
    public func start() throws {
        let client = try MQTTClient(clientID: "stepd-\(configuration.deviceID)", callbacks: .init(
            connected: { [weak self] code in
                guard let self else { return }
                queue.async { self.connected(code) }
            },
            disconnected: { [weak self] reason in
                guard let self else { return }
                queue.async { self.disconnected(reason) }
            },
            acknowledged: { [weak self] id in
                guard let self else { return }
                queue.async { self.acknowledged(messageID: id) }
            },
            waiting: { [weak self] reason, seconds in
                guard let self else { return }
                queue.async { self.waiting(reason: reason, retrySeconds: seconds) }
            }))
        try client.setWill(topic: topics.status, payload: FleetPayloads.offline)
        if let username = configuration.username {
            try client.setCredentials(username: username, password: configuration.password)
        }
        if configuration.broker.tls {
            try client.setTLS(caFile: configuration.caFile, certFile: configuration.certFile, keyFile: configuration.keyFile)
        }
        self.client = client
        subscribeToEngine()
        queue.sync { startOutbox() }
        client.start(host: configuration.broker.host, port: configuration.broker.port,
                     keepaliveSeconds: configuration.keepaliveSeconds, backoff: Self.backoff)
        logger.debug("mqtt: connecting to \(configuration.broker) as \(topics.prefix)")
    }

    /// A clean stop: `offline` (retained) in place of the last will, then DISCONNECT. Called before the store
    /// closes; rows not acknowledged stay in the outbox for the next run.
    public func stop() {
        queue.sync {
            stopping = true
            sealTimer?.cancel()
            sealTimer = nil
            if link == .connected {
                _ = client?.publish(topic: topics.status, payload: FleetPayloads.offline, qos: 1, retain: true)
            }
        }
        client?.stop()
    }

    // MARK: Engine events (hop from the processing queue)

    private func subscribeToEngine() {
        engine.onEvent { [weak self] event in
            guard let self else { return }
            switch event {
            case .pedometer(let snapshot):
                queue.async { self.stepsChanged(snapshot) }
            case .location(.position(let fix)):
                queue.async { self.positionChanged(fix) }
            case .location(.visit):
                // The store has the visit already (the engine records it before it tells its listeners); sealing
                // now takes it from there into the outbox rather than at the next minute.
                queue.async { self.visitRecorded() }
            default:
                break
            }
        }
        engine.onReset { [weak self] _ in
            guard let self else { return }
            let snapshot = engine.snapshot
            queue.async { self.publishSteps(snapshot, forced: true) }
        }
    }

    private func stepsChanged(_ snapshot: EngineSnapshot) {
        dispatchPrecondition(condition: .onQueue(queue))
        // The walk's end carries its final figures: always sent.
        publishSteps(snapshot, forced: snapshot.activity != .walking)
    }

    /// Home Assistant's discovery, declaring only what exists; again when a barometer is found after the
    /// connection (an IIO one that appears later) or is known to be absent.
    private func publishDiscovery(_ snapshot: EngineSnapshot) {
        guard configuration.homeAssistant, link == .connected else { return }
        // Not yet known while the barometer starts (kind `none`, state `starting`): wait rather than declare
        // floors gone, which would delete the sensor from Home Assistant at each start.
        let barometer = snapshot.barometer
        guard barometer.kind != "none" || barometer.state != .starting else {
            queue.asyncAfter(deadline: .now() + 0.5) { [weak self] in
                guard let self else { return }
                publishDiscovery(engine.snapshot)
            }
            return
        }
        let hasBarometer = barometer.kind != "none"
        guard declaredBarometer != hasBarometer else { return }
        declaredBarometer = hasBarometer
        let discovery = HomeAssistantDiscovery(deviceID: configuration.deviceID, deviceName: configuration.deviceName, topics: topics,
                                               hasBarometer: hasBarometer, hasGPS: engine.locationSnapshot.enabled)
        for message in discovery.messages {
            publishRetained(message.topic, message.payload)
        }
    }

    private func publishSteps(_ snapshot: EngineSnapshot, forced: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        publishDiscovery(snapshot)
        let now = Self.monotonicSeconds
        if forced {
            stepsThrottle.forced(now: now)
        } else {
            switch stepsThrottle.offer(now: now) {
            case .now: break
            case .pending: return
            case .at(let due):
                queue.asyncAfter(deadline: .now() + max(0, due - now)) { [self] in
                    guard stepsThrottle.trailingFired(due: due, now: Self.monotonicSeconds) else { return }
                    publishRetained(topics.steps, FleetPayloads.json(Replies.steps(engine.snapshot, id: nil)))
                }
                return
            }
        }
        publishRetained(topics.steps, FleetPayloads.json(Replies.steps(snapshot, id: nil)))
    }

    private func positionChanged(_ fix: Fix) {
        dispatchPrecondition(condition: .onQueue(queue))
        latestPosition = fix
        let now = Self.monotonicSeconds
        switch positionThrottle.offer(now: now) {
        case .now:
            publishRetained(topics.position, FleetPayloads.json(LocationWire.position(fix, now: Date())))
        case .pending:
            break
        case .at(let due):
            queue.asyncAfter(deadline: .now() + max(0, due - now)) { [self] in
                guard positionThrottle.trailingFired(due: due, now: Self.monotonicSeconds) else { return }
                if let latestPosition {
                    publishRetained(topics.position, FleetPayloads.json(LocationWire.position(latestPosition, now: Date())))
                }
            }
        }
    }

    /// Retained state (QoS 1, not through the outbox: only the newest matters). Dropped while disconnected;
    /// the newest is sent again on connecting.
    private func publishRetained(_ topic: String, _ payload: String) {
        guard link == .connected, !stopping, let client else { return }
        if case .failure(let error) = client.publish(topic: topic, payload: payload, qos: 1, retain: true) {
            logger.debug("mqtt: \(topic) not sent: \(error.reason)")
        }
    }

    // MARK: The outbox

    private func startOutbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        store.startOutbox(markingSentThrough: finishedMinutes.newest(at: Date())) { [self] result in
            queue.async { [self] in
                switch result {
                case .success(let queued):
                    outboxReady = true
                    setQueued(queued)
                    if queued > 0 { logger.notice("mqtt: \(queued) messages waiting in the outbox from earlier runs") }
                    seal()
                case .failure(let error):
                    logger.debug("mqtt: outbox not ready: \(error); trying again in \(Self.storeRetrySeconds) s")
                    scheduleSeal(at: Date().addingTimeInterval(Self.storeRetrySeconds), retryStart: true)
                }
            }
        }
    }

    /// Puts the minutes finished, and the visits' arrivals and departures recorded, since the last time into
    /// the outbox, then waits for the next minute to finish.
    private func seal() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping else { return }
        let newest = finishedMinutes.newest(at: Date())
        store.sealOutbox(through: newest, encoder: .payloads(device: configuration.deviceID), completion: { [self] result in
            queue.async { [self] in
                guard !stopping else { return }
                switch result {
                case .success(let sealing):
                    if sealing.added > 0 { logger.debug("mqtt: \(sealing.added) finished minutes and visit events into the outbox") }
                    setQueued(sealing.queued)
                    window.rowAdded()
                    pump()
                    scheduleSeal(at: finishedMinutes.nextDeadline(after: newest), retryStart: false)
                case .failure(let error):
                    logger.debug("mqtt: minutes not sealed: \(error); trying again in \(Self.storeRetrySeconds) s")
                    scheduleSeal(at: Date().addingTimeInterval(Self.storeRetrySeconds), retryStart: false)
                }
            }
        })
    }

    private func scheduleSeal(at date: Date, retryStart: Bool) {
        guard !stopping else { return }
        sealTimer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            if retryStart { startOutbox() } else { seal() }
        }
        // A wall-clock deadline: minutes are wall-clock minutes, and a board that slept must catch up.
        timer.schedule(wallDeadline: .now() + max(0, date.timeIntervalSinceNow), leeway: .milliseconds(500))
        timer.resume()
        sealTimer = timer
    }

    /// A visit began or ended: sealed at once. Before the outbox has started, its start seals it.
    private func visitRecorded() {
        dispatchPrecondition(condition: .onQueue(queue))
        if outboxReady { seal() }
    }

    /// Sends what the window has room for, reading more rows from the store when it runs dry.
    private func pump() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard link == .connected, !stopping, let client else { return }
        while let row = window.next() {
            switch client.publish(topic: topics.topic(of: row.kind), payload: row.payload, qos: 1, retain: false) {
            case .success(let messageID):
                window.sent(row, messageID: messageID)
            case .failure(let error):
                window.unsent(row)
                logger.debug("mqtt: outbox row \(row.id) not sent: \(error.reason)")
                return
            }
        }
        guard let limit = window.readRequest() else { return }
        let generation = window.generation
        store.outboxRows(after: window.cursor, limit: limit) { [self] result in
            queue.async { [self] in
                switch result {
                case .success(let rows):
                    // Rows acknowledged whose removal has not reached the store yet are not sent again.
                    window.received(rows, limit: limit, generation: generation) {
                        self.removing.contains($0) || self.acknowledged.contains($0)
                    }
                    pump()
                case .failure(let error):
                    window.readFailed(generation: generation)
                    logger.debug("mqtt: outbox not readable: \(error)")
                }
            }
        }
    }

    private func acknowledged(messageID: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let id = window.acknowledged(messageID: messageID) else { return }
        lastAck = Date()
        acknowledged.append(id)
        removeAcknowledged()
        pump()
    }

    /// One removal at a time, with every row acknowledged meanwhile.
    private func removeAcknowledged() {
        guard removing.isEmpty, !acknowledged.isEmpty else { return }
        let ids = acknowledged
        acknowledged.removeAll()
        removing = Set(ids)
        store.removeFromOutbox(ids: ids) { [self] result in
            queue.async { [self] in
                removing.removeAll()
                switch result {
                case .success(let queued): setQueued(queued)
                case .failure(let error):
                    // Sent again after the next connection; the subscriber drops the duplicate by its key.
                    logger.debug("mqtt: acknowledged rows not removed: \(error)")
                }
                removeAcknowledged()
            }
        }
    }

    private func setQueued(_ count: Int) {
        queued = count
        publishStatus()
    }

    // MARK: The link (hops from libmosquitto's thread)

    private func connected(_ code: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping else { return }
        guard code == 0 else {
            // The network thread ends this attempt and says when the next one is (`waiting`).
            refusal = "the broker refused the connection: \(MQTTClient.connackWords(code))"
            return
        }
        refusal = nil
        setLink(.connected)
        publishRetained(topics.status, FleetPayloads.online)
        declaredBarometer = nil
        publishDiscovery(engine.snapshot)
        publishSteps(engine.snapshot, forced: true)
        if let latestPosition {
            publishRetained(topics.position, FleetPayloads.json(LocationWire.position(latestPosition, now: Date())))
        }
        window.restart()
        pump()
    }

    private func disconnected(_ reason: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping, link == .connected else { return }
        // Until the network thread connects again nothing is handed to libmosquitto; it says when (`waiting`).
        let lost = "lost the connection: \(MQTTClient.clause(MQTTClient.words(reason)))"
        loss = lost
        setLink(.disconnected(lost))
    }

    /// An attempt failed, or the connection ended: why, and when the next attempt is.
    private func waiting(reason: String, retrySeconds: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping else { return }
        let why = refusal ?? loss ?? reason
        refusal = nil
        loss = nil
        let text = "\(why), next try in \(retrySeconds) s"
        switch link {
        case .connecting: setLink(.connecting(text))
        case .connected, .disconnected: setLink(.disconnected(text))
        }
    }

    private func setLink(_ state: LinkState) {
        let before = link
        link = state
        publishStatus()
        switch (before, state) {
        case (.connected, .connected): break
        case (_, .connected):
            logger.notice("mqtt: connected to \(configuration.broker) as \(topics.prefix); \(queued) messages queued")
        // Each attempt is a debug line; the first failure after a connection (or at start) a warning.
        case (.connected, .disconnected(let reason)), (.connecting(nil), .connecting(let reason?)):
            logger.warning("mqtt: \(configuration.broker): \(reason); retrying (waits doubling to \(Self.backoff.longestSeconds) s), the outbox keeps what is not acknowledged")
        case (_, .disconnected(let reason)), (_, .connecting(let reason?)):
            logger.debug("mqtt: \(configuration.broker): \(reason)")
        default: break
        }
    }

    private func publishStatus() {
        let (state, error): (String, String?) = {
            switch link {
            case .connecting(let reason): return ("connecting", reason)
            case .connected: return ("connected", nil)
            case .disconnected(let reason): return ("disconnected", reason)
            }
        }()
        let queued = self.queued
        let lastAck = self.lastAck.map(Timestamp.string)
        published.withLockedValue {
            $0.state = state
            $0.error = error
            $0.queued = queued
            $0.last_ack = lastAck
        }
    }
}
