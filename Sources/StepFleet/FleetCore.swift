import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import StepEngine
import StepProcessing
import StepProtocol
import StepStore
import Timekeeping

/// What the `stepd.mqtt` queue owns: the link's state, the outbox window, the throttles, the seal timer.
/// `FleetPublisher` keeps it in a `Locked` value taken only on that queue (each entry point checks it), so the lock is
/// never contended; it is what lets the compiler check that nothing else touches this state. Work for later
/// (a store's answer, a throttle's trailing edge, a timer) hops back through the publisher (`hop`).
final class FleetCore {
    let configuration: FleetConfiguration
    let topics: FleetTopics
    let engine: Engine
    private let finishedMinutes: FinishedMinutes
    private let store: StepStore
    private let logger: Logger
    private let queue: DispatchQueue
    private let published: NIOLockedValueBox<MQTTStatusMessage>
    /// Set by `FleetPublisher.start`, with `client`.
    weak var owner: FleetPublisher?
    var client: MQTTClient?

    /// `connecting` until the first connection (with why the last attempt failed, once one has), then
    /// `connected` or `disconnected` with why.
    private enum LinkState: Equatable { case connecting(String?), connected, disconnected(String) }
    private var link = LinkState.connecting(nil)
    /// The broker's refusal of the last attempt (a CONNACK with a code), said instead of libmosquitto's words.
    private var refusal: String?
    /// How the connection was lost, said once with the first wait after it.
    private var loss: String?
    private var stopping = false
    private var window = OutboxWindow(capacity: FleetPublisher.windowCapacity)
    /// Acknowledged rows not yet removed from the store, and whether a removal is under way.
    private var acknowledged: [Int64] = []
    private var removing: Set<Int64> = []
    private var queued = 0
    private var lastAck: Date?
    private var stepsThrottle = PublishThrottle(intervalSeconds: FleetPublisher.stepsIntervalSeconds)
    private var positionThrottle = PublishThrottle(intervalSeconds: FleetPublisher.positionIntervalSeconds)
    private var latestPosition: Fix?
    private var sealTimer: (any ClockTimer)?
    private var outboxReady = false
    /// Whether the discovery last published declared a floors sensor; nil before it was published on this connection.
    private var declaredBarometer: Bool?
    /// A STEPS waits for this (`waitingForBarometer`) while it is not yet known whether floors belong in it.
    private let createdAt: Double
    private var waitingForBarometer = false
    /// The messages of a clean stop (`publishFinal`) not yet acknowledged, and what is told when none is left.
    private var finalPending: Set<Int32> = []
    private var finalAcknowledged: (@Sendable () -> Void)?

    init(configuration: FleetConfiguration, topics: FleetTopics, engine: Engine, store: StepStore, logger: Logger,
         queue: DispatchQueue, published: NIOLockedValueBox<MQTTStatusMessage>) {
        self.configuration = configuration
        self.topics = topics
        self.engine = engine
        createdAt = engine.clock.monotonicSeconds
        finishedMinutes = FinishedMinutes(holdBackSeconds: store.configuration.stepHoldBackSeconds)
        self.store = store
        self.logger = logger
        self.queue = queue
        self.published = published
    }

    /// Runs `body` on the queue with this state, now or after `seconds`.
    private func hop(after seconds: Double, _ body: @escaping @Sendable (FleetCore) -> Void) {
        owner?.hop(after: seconds, body)
    }

    /// A clean stop begins: nothing more is published but what `publishFinal` sends. Returns whether the link is
    /// up (whether there is anything to send).
    func beginStop() -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        stopping = true
        sealTimer?.cancel()
        sealTimer = nil
        return link == .connected && client != nil
    }

    /// The last messages of a clean stop, with the count final (the sources have stopped): the retained STEPS, the
    /// minutes not yet finished as they stand (`partial`; the finished bin sent under the same key after the next
    /// start replaces them), and `offline` in place of the last will. `acknowledged` is called once the broker has
    /// acknowledged them all (QoS 1), and at once when nothing could be sent. Returns the client to disconnect.
    func publishFinal(_ snapshot: EngineSnapshot, partialMinutes: [(key: String, payload: String)],
                      acknowledged: @escaping @Sendable () -> Void) -> MQTTClient? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard link == .connected, let client else {
            acknowledged()
            return client
        }
        var messages = [(topics.steps, FleetPayloads.json(Replies.steps(snapshot, id: nil)), true)]
        messages += partialMinutes.map { (topics.minute, $0.payload, false) }
        messages.append((topics.status, FleetPayloads.offline, true))
        for (topic, payload, retain) in messages {
            switch client.publish(topic: topic, payload: payload, qos: 1, retain: retain) {
            case .success(let messageID): finalPending.insert(messageID)
            case .failure(let error): logger.debug("mqtt: \(topic) not sent at the stop: \(error.reason)")
            }
        }
        if finalPending.isEmpty { acknowledged() } else { finalAcknowledged = acknowledged }
        return client
    }

    // MARK: Engine events

    func stepsChanged(_ snapshot: EngineSnapshot) {
        dispatchPrecondition(condition: .onQueue(queue))
        // The walk's end carries its final figures: always sent.
        publishSteps(snapshot, forced: snapshot.activity != .walking)
    }

    /// The barometer starts after the link (the sources last): until it says whether it is there (kind `none`,
    /// state `starting`), a STEPS might lack the floors it will have, and discovery might declare floors gone,
    /// which would delete the sensor from Home Assistant at each start. Waited for at most this long.
    static let barometerWaitSeconds = 10.0

    private func barometerKnown(_ snapshot: EngineSnapshot) -> Bool {
        snapshot.barometer.kind != "none" || snapshot.barometer.state != .starting
            || engine.clock.monotonicSeconds - createdAt > Self.barometerWaitSeconds
    }

    /// Home Assistant's discovery, declaring only what exists; again when a barometer is found after the
    /// connection (an IIO one that appears later) or is known to be absent.
    private func publishDiscovery(_ snapshot: EngineSnapshot) {
        guard configuration.homeAssistant, link == .connected else { return }
        let hasBarometer = snapshot.barometer.kind != "none"
        guard declaredBarometer != hasBarometer else { return }
        declaredBarometer = hasBarometer
        let discovery = HomeAssistantDiscovery(deviceID: configuration.deviceID, deviceName: configuration.deviceName,
                                               entityName: configuration.entityName, topics: topics,
                                               hasBarometer: hasBarometer, hasGPS: engine.locationSnapshot.enabled)
        for message in discovery.messages {
            publishRetained(message.topic, message.payload)
        }
    }

    func publishSteps(_ snapshot: EngineSnapshot, forced: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard barometerKnown(snapshot) else {
            guard !waitingForBarometer else { return }
            waitingForBarometer = true
            hop(after: 0.2) { core in
                core.waitingForBarometer = false
                core.publishSteps(core.engine.snapshot, forced: true)
            }
            return
        }
        publishDiscovery(snapshot)
        let now = engine.clock.monotonicSeconds
        if forced {
            stepsThrottle.forced(now: now)
        } else {
            switch stepsThrottle.offer(now: now) {
            case .now: break
            case .pending: return
            case .at(let due):
                hop(after: max(0, due - now)) { core in
                    guard core.stepsThrottle.trailingFired(due: due, now: core.engine.clock.monotonicSeconds) else { return }
                    core.publishRetained(core.topics.steps, FleetPayloads.json(Replies.steps(core.engine.snapshot, id: nil)))
                }
                return
            }
        }
        publishRetained(topics.steps, FleetPayloads.json(Replies.steps(snapshot, id: nil)))
    }

    func positionChanged(_ fix: Fix) {
        dispatchPrecondition(condition: .onQueue(queue))
        latestPosition = fix
        let now = engine.clock.monotonicSeconds
        switch positionThrottle.offer(now: now) {
        case .now:
            publishRetained(topics.position, FleetPayloads.json(LocationWire.position(fix, now: engine.clock.now)))
        case .pending:
            break
        case .at(let due):
            hop(after: max(0, due - now)) { core in
                guard core.positionThrottle.trailingFired(due: due, now: core.engine.clock.monotonicSeconds) else { return }
                if let latestPosition = core.latestPosition {
                    core.publishRetained(core.topics.position, FleetPayloads.json(LocationWire.position(latestPosition, now: core.engine.clock.now)))
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

    func startOutbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        let owner = owner
        store.startOutbox(markingSentThrough: finishedMinutes.newest(at: engine.clock.now)) { result in
            owner?.hop { core in core.outboxStarted(result) }
        }
    }

    private func outboxStarted(_ result: Result<Int, StoreError>) {
        switch result {
        case .success(let queued):
            outboxReady = true
            setQueued(queued)
            if queued > 0 { logger.notice("mqtt: \(queued) messages waiting in the outbox from earlier runs") }
            seal()
        case .failure(let error):
            logger.debug("mqtt: outbox not ready: \(error); trying again in \(FleetPublisher.storeRetrySeconds) s")
            scheduleSeal(at: engine.clock.now.addingTimeInterval(FleetPublisher.storeRetrySeconds), retryStart: true)
        }
    }

    /// Puts the minutes finished, and the visits' arrivals and departures recorded, since the last time into
    /// the outbox, then waits for the next minute to finish.
    private func seal() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping else { return }
        let newest = finishedMinutes.newest(at: engine.clock.now)
        let owner = owner
        store.sealOutbox(through: newest, encoder: .payloads(device: configuration.deviceID), completion: { result in
            owner?.hop { core in core.sealed(result, newest: newest) }
        })
    }

    private func sealed(_ result: Result<StepStore.Sealing, StoreError>, newest: Int64) {
        guard !stopping else { return }
        switch result {
        case .success(let sealing):
            if sealing.added > 0 { logger.debug("mqtt: \(sealing.added) finished minutes and visit events into the outbox") }
            setQueued(sealing.queued)
            window.rowAdded()
            pump()
            scheduleSeal(at: finishedMinutes.nextDeadline(after: newest), retryStart: false)
        case .failure(let error):
            logger.debug("mqtt: minutes not sealed: \(error); trying again in \(FleetPublisher.storeRetrySeconds) s")
            scheduleSeal(at: engine.clock.now.addingTimeInterval(FleetPublisher.storeRetrySeconds), retryStart: false)
        }
    }

    private func scheduleSeal(at date: Date, retryStart: Bool) {
        guard !stopping else { return }
        sealTimer?.cancel()
        let owner = owner
        // A wall-clock deadline: minutes are wall-clock minutes, and a board that slept must catch up.
        let timer = engine.clock.makeWallTimer(queue: queue) { [weak owner] in
            owner?.onQueue { core in if retryStart { core.startOutbox() } else { core.seal() } }
        }
        timer.schedule(after: date.timeIntervalSince(engine.clock.now), repeating: nil, leewaySeconds: 0.5)
        sealTimer = timer
    }

    /// A visit began or ended: sealed at once. Before the outbox has started, its start seals it.
    func visitRecorded() {
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
        let owner = owner
        store.outboxRows(after: window.cursor, limit: limit) { result in
            owner?.hop { core in core.received(result, limit: limit, generation: generation) }
        }
    }

    private func received(_ result: Result<[OutboxRow], StoreError>, limit: Int, generation: Int) {
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

    func acknowledged(messageID: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        if finalPending.remove(messageID) != nil, finalPending.isEmpty, let finalAcknowledged {
            self.finalAcknowledged = nil
            finalAcknowledged()
        }
        guard let id = window.acknowledged(messageID: messageID) else { return }
        lastAck = engine.clock.now
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
        let owner = owner
        store.removeFromOutbox(ids: ids) { result in
            owner?.hop { core in core.removed(result) }
        }
    }

    private func removed(_ result: Result<Int, StoreError>) {
        removing.removeAll()
        switch result {
        case .success(let queued): setQueued(queued)
        case .failure(let error):
            // Sent again after the next connection; the subscriber drops the duplicate by its key.
            logger.debug("mqtt: acknowledged rows not removed: \(error)")
        }
        removeAcknowledged()
    }

    private func setQueued(_ count: Int) {
        queued = count
        publishStatus()
    }

    // MARK: The link (hops from libmosquitto's thread)

    func connected(_ code: Int32) {
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
        publishSteps(engine.snapshot, forced: true)
        if let latestPosition {
            publishRetained(topics.position, FleetPayloads.json(LocationWire.position(latestPosition, now: engine.clock.now)))
        }
        window.restart()
        pump()
    }

    func disconnected(_ reason: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping, link == .connected else { return }
        // Until the network thread connects again nothing is handed to libmosquitto; it says when (`waiting`).
        let lost = "lost the connection: \(MQTTClient.clause(MQTTClient.words(reason)))"
        loss = lost
        setLink(.disconnected(lost))
    }

    /// An attempt failed, or the connection ended: why, and when the next attempt is.
    /// The daemon dropped the connection itself (a packet from the broker over the size limit): the reason
    /// STATUS gives until the next attempt, and a warning (one per connection, so the back-off spaces them).
    func dropped(_ reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopping else { return }
        loss = reason
        logger.warning("mqtt: \(configuration.broker): \(reason)")
    }

    func waiting(reason: String, retrySeconds: Int) {
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
            logger.warning("mqtt: \(configuration.broker): \(reason); retrying (waits doubling to \(FleetPublisher.backoff.longestSeconds) s), the outbox keeps what is not acknowledged")
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
