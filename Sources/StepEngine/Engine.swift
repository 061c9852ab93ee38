import Dispatch
import Foundation
import Locking
import Logging
import NIOConcurrencyHelpers
import StepProcessing
import StepProtocol
import Timekeeping

/// The processing engine. It owns the pipeline and the count on one serial dispatch queue: sources hand
/// samples over from their own threads, and everything that changes state runs on `queue`. Readers (the
/// socket server) see only the snapshot the queue publishes after each batch.
///
/// `Sendable` by construction: the queue's state is an `EngineState` in a mutex that only the queue's work takes
/// (`withState`), and what other threads touch (snapshots, observers, flags, inboxes) is in locked boxes. The
/// Events raised while the state is changed are kept aside and delivered to the `EngineObserver`s once the state's
/// lock is released (`withState`): no observer runs with the lock held. Time comes from `clock` (Timekeeping).
///
/// The engine's parts are in files of their own: samples (Engine+Samples), the barometer and floors
/// (Engine+Barometer), the stall and midnight timers (Engine+Timers), requests and restoring a saved count
/// (Engine+Requests), position (Location/Engine+Location).
public final class Engine: SampleSink, BarometerSink, Sendable {
    public struct Configuration: Sendable {
        public var detector: StepDetectorKind = .default
        /// The pipeline's output rate; not a setting (the detectors are tuned at 60 Hz).
        public var rateHz: Double = 60
        /// The walker's height, for the stride length until GPS calibrates it. ConfigOption's `height` default:
        /// ConfigDefaultsTests ties the two.
        public var heightMeters: Double = 1.70
        /// Where the device is carried, for the walking gate and the gait measures of each bout (ConfigOption's
        /// `placement`).
        public var placement: Placement = .default
        public var location = LocationConfiguration()
        public init() {}
    }

    public let configuration: Configuration
    /// The wall and monotonic clocks and the timers (midnight, the stall, a stale fix): a manual one in tests.
    public let clock: any DaemonClock
    /// How long after it happened the configured detector may report a step (`StepStore.Configuration`).
    public let stepHoldBackSeconds: Double
    let queue = DispatchQueue(label: "stepd.pipeline", qos: .userInitiated)
    let logger: Logger
    /// `daemonZone`: the process's zone does not change while it runs (the C library reads TZ and
    /// /etc/localtime once).
    let dayZone: LocalZone
    /// Owned by `queue`: taken only through `withState`.
    private let state: Locked<EngineState>

    let latestHardwareSteps = NIOLockedValueBox<Int?>(nil)
    /// The sensor-counter mode's ledger and what STATUS says of it (Engine+HardwareSteps.swift).
    let sensorCounter = NIOLockedValueBox(SensorCounterState())
    /// Barometer readings waiting for the next batch of samples, which counts them (they wait for the
    /// detector's hold-back anyway): a reading then costs the processing queue no wake-up of its own (a hop
    /// per reading would wake it 4 times a second at the barometer's rate; docs/barometer.md). A reading goes to the queue
    /// at once only while no batch is coming: the accelerometer not running, or many readings waiting.
    let pressureInbox = NIOLockedValueBox(PressureInbox())
    struct PressureInbox: Sendable {
        var readings: [PressureReading] = []
        /// Mirrors `source.state == .running` for the barometer's thread.
        var batchesComing = false
        /// The newest sample handed to `receive`, processed or still queued: what tells a stalled
        /// accelerometer from a queue that is behind (a replay at full speed on a loaded machine).
        var newestSampleTime = -Double.infinity
        /// More than this waiting and a batch is late: the queue looks at them (the stall check in `receive`).
        static let mostWaiting = 32
    }
    /// Readings the source dropped itself (IIO glitches), added to the pipeline's rejections in STATUS.
    let sourceRejected = NIOLockedValueBox(0)

    private let published: NIOLockedValueBox<EngineSnapshot>
    let publishedLocation: NIOLockedValueBox<LocationSnapshot>
    private let observers = NIOLockedValueBox<[any EngineObserver]>([])
    /// Events raised under the state's lock, delivered when `withState` has released it. Touched on `queue` only.
    private let outbox = NIOLockedValueBox<[EngineEvent]>([])
    let motionWanted = NIOLockedValueBox(false)

    public init(configuration: Configuration = .init(), clock: any DaemonClock = SystemClock(),
                logger: Logger = Logger(label: "stepd.engine")) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        dayZone = Self.daemonZone
        if let warning = DaemonTimeZone.current.warning { logger.warning("\(warning)") }
        if let notice = DaemonTimeZone.current.notice { logger.notice("\(notice)") }
        var initial = EngineState(configuration: configuration, zone: dayZone, now: clock.now)
        stepHoldBackSeconds = initial.pipeline.detector.longestReportDelaySeconds
        published = NIOLockedValueBox(initial.snapshot(rateOutHz: configuration.rateHz, sourceRejected: 0,
                                                       hardwareSteps: nil))
        publishedLocation = NIOLockedValueBox(initial.locationTracker.snapshot)
        let outbox = self.outbox
        // The tracker's records (path points, visits) join the events, in their order.
        initial.locationTracker.recorder = { record in outbox.withLockedValue { $0.append(.record(record)) } }
        state = Locked(initial)
        queue.async { [self] in withState { scheduleMidnight(&$0) } }
    }

    /// The zone the daemon's days follow ($TZ as the C library reads it, else /etc/localtime: DaemonTimeZone),
    /// as STATUS names it and `history` bins days by.
    public static var daemonZone: LocalZone { DaemonTimeZone.current.zone }

    /// Runs `body` with the queue's state. Only on `queue`, so the lock is never waited for; and never from
    /// within `body` (the mutex is not recursive): helpers take the state as an `inout` argument instead.
    /// The events `body` raised (`emit`) are delivered after the lock is released, before `withState` returns.
    func withState<Result: Sendable>(_ body: (inout EngineState) -> Result) -> Result {
        dispatchPrecondition(condition: .onQueue(queue))
        let result = state.withLock { body(&$0) }
        deliverEvents()
        return result
    }

    /// Raises an event for the observers; delivered once the state's lock is released. On `queue`.
    func emit(_ event: EngineEvent) {
        outbox.withLockedValue { $0.append(event) }
    }

    private func deliverEvents() {
        let events = outbox.withLockedValue { box -> [EngineEvent] in
            defer { box.removeAll(keepingCapacity: true) }
            return box
        }
        guard !events.isEmpty else { return }
        let observers = self.observers.withLockedValue { $0 }
        for event in events {
            for observer in observers { observer.engine(self, emitted: event) }
        }
    }

    /// The latest published state; cheap, safe from any thread.
    public var snapshot: EngineSnapshot { published.withLockedValue { $0 } }

    /// Adds an observer, told of every event after those registered before it (the store first: the fleet
    /// relies on a bout or a visit being recorded when it hears of it).
    public func register(_ observer: any EngineObserver) {
        observers.withLockedValue { $0.append(observer) }
    }

    /// Removes an observer; an event being delivered meanwhile may still reach it once.
    public func unregister(_ observer: any EngineObserver) {
        observers.withLockedValue { $0.removeAll { $0 === observer } }
    }

    /// Motion events cost a message per sample; the server turns them on only while someone watches them.
    public func setMotionWanted(_ wanted: Bool) {
        motionWanted.withLockedValue { $0 = wanted }
    }

    /// Names the source in the snapshot before it returns, so that the first STATUS already shows it (a client
    /// of socket activation can ask as soon as the socket is served). Called once at start, off the queue.
    public func attach(source: SampleSource) {
        let (kind, description, demo) = (source.kind, source.description, source.isDemo)
        queue.sync { [self] in
            withState { s in
                s.source = (kind, description, .starting)
                s.demo = demo
                publish(s)
            }
        }
    }

    /// Runs `body` on the processing queue: the watchdog's proof that the queue still drains.
    public func probe(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Waits until every batch handed over so far has been processed (used by shutdown and tests).
    public func drain() { queue.sync {} }

    /// Publishes the state for readers on other threads, and returns it for this queue's own events.
    @discardableResult
    func publish(_ s: EngineState) -> EngineSnapshot {
        let snapshot = s.snapshot(rateOutHz: configuration.rateHz,
                                  sourceRejected: sourceRejected.withLockedValue { $0 },
                                  hardwareSteps: latestHardwareSteps.withLockedValue { $0 })
        published.withLockedValue { $0 = snapshot }
        return snapshot
    }
}
