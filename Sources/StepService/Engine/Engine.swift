import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import StepProcessing
import StepProtocol

/// The processing engine. It owns the pipeline and the count on one serial dispatch queue: sources hand
/// samples over from their own threads, and everything that changes state runs on `queue`. Readers (the
/// socket server) see only the snapshot the queue publishes after each batch.
///
/// `@unchecked Sendable`: its mutable state is owned by `queue` (checked with dispatchPrecondition where the
/// queue's work begins); what other threads touch (snapshots, handlers, flags) is behind locks.
public final class Engine: SampleSink, BarometerSink, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var detector: StepDetectorKind = .default
        public var rateHz: Double = 60
        /// The walker's height, for the stride length until GPS calibrates it.
        public var heightMeters: Double = 1.70
        public var location = LocationConfiguration()
        public init() {}
    }

    public let configuration: Configuration
    /// How long after it happened the configured detector may report a step (`StepStore.Configuration`).
    public let stepHoldBackSeconds: Double
    let queue = DispatchQueue(label: "stepd.pipeline", qos: .userInitiated)
    let logger: Logger

    // Owned by `queue`.
    private let pipeline: StepPipeline
    private(set) var steps = 0
    private var since = Date()
    private var cadence = CadenceMeter()
    private var activity = ActivityTracker()
    private var stride: StrideModel
    private var motion: MotionEstimator
    private var lastMotion: MotionEstimate?
    /// Pressure readings held until the steps around them are known, counted into floors as `stepd analyze`
    /// counts them (StepAlignedFloors); no floors in the snapshot before a reading comes.
    private var floors: StepAlignedFloors
    private var barometer = BarometerState()
    private var lastSampleTime = 0.0
    private var lastSampleWall = Date()
    private var lastPedometerPush = -Double.infinity
    private var rateWindowStart: Double?
    private var rateWindowCount = 0
    private var rateInHz = 0.0
    private var source: (kind: String, description: String, state: SourceState) = ("none", "", .starting)
    private var demo = false
    /// Fires when steps stop coming without samples to tell it (a source that stalls): see `armStallTimer`.
    private var stallTimer: DispatchSourceTimer?
    private var stallTimerArmed = false
    private var lastStepWall: Date?
    /// Today's figures (since local midnight in the daemon's zone), and the timer that starts the next day at
    /// midnight when no batch comes to do it (a source stopped, or none).
    private var day: DayCounter
    /// `daemonCalendar` read once: building a Calendar costs more than a batch should pay, and the process's
    /// zone does not change while it runs (Foundation reads TZ and /etc/localtime once).
    private let dayCalendar: Calendar
    private var midnightTimer: DispatchSourceTimer?

    private let latestHardwareSteps = NIOLockedValueBox<Int?>(nil)
    /// Barometer readings waiting for the next batch of samples, which counts them (they wait for the
    /// detector's hold-back anyway): a reading then costs the processing queue no wake-up of its own, which
    /// at 4 Hz was 4 of the barometer's 8 wake-ups a second (docs/barometer.md). A reading goes to the queue
    /// at once only while no batch is coming: the accelerometer not running, or many readings waiting.
    private let pressureInbox = NIOLockedValueBox(PressureInbox())
    private struct PressureInbox {
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
    private let sourceRejected = NIOLockedValueBox(0)

    private let published: NIOLockedValueBox<EngineSnapshot>
    // Position (Location/Engine+Location.swift): owned by `queue`, published apart from the step snapshot.
    var locationTracker: LocationTracker
    let publishedLocation = NIOLockedValueBox(LocationSnapshot())
    let eventHandlers = NIOLockedValueBox<[@Sendable (EngineEvent) -> Void]>([])
    private let motionWanted = NIOLockedValueBox(false)
    /// Steps taken over from the store at start (see `restore`); zero after a reset.
    private var restoredSteps = 0
    private let resetHandlers = NIOLockedValueBox<[@Sendable (Date) -> Void]>([])

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "stepd.engine")) {
        self.configuration = configuration
        self.logger = logger
        pipeline = StepPipeline(detector: configuration.detector.make(sampleRateHz: configuration.rateHz),
                                rateHz: configuration.rateHz)
        stepHoldBackSeconds = pipeline.detector.longestReportDelaySeconds
        floors = StepAlignedFloors(holdBackSeconds: stepHoldBackSeconds)
        stride = StrideModel(heightMeters: configuration.heightMeters)
        motion = MotionEstimator(sampleRateHz: configuration.rateHz)
        dayCalendar = Self.daemonCalendar
        day = DayCounter(now: Date(), calendar: dayCalendar)
        var snapshot = EngineSnapshot()
        snapshot.today = day.today
        snapshot.detector = pipeline.detector.name
        snapshot.rateOutHz = configuration.rateHz
        snapshot.strideMeters = stride.strideMeters
        published = NIOLockedValueBox(snapshot)
        locationTracker = LocationTracker(configuration: configuration.location)
        publishedLocation.withLockedValue { $0 = locationTracker.snapshot }
        queue.async { [self] in scheduleMidnight() }
    }

    /// The calendar the daemon's days follow: its time zone ($TZ, else /etc/localtime), as STATUS names it and
    /// `history` bins days by.
    public static var daemonCalendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        return calendar
    }

    /// Ends a walk that samples can no longer end, and tells the watchers. The cadence ends with it: no
    /// step is coming to make it fall to zero by itself.
    private func endWalk(pauseDetectedAt wallNow: Date) {
        dispatchPrecondition(condition: .onQueue(queue))
        cadence.reset()
        guard let (_, pauseStart) = activity.advance(to: .infinity) else {
            publish()
            return
        }
        let wall = wallNow.addingTimeInterval(pauseStart - lastSampleTime)
        let handlers = eventHandlers.withLockedValue { $0 }
        let s = publish()
        for handler in handlers {
            handler(.pedometer(s))
            handler(.activity(.stationary, time: wall))
        }
    }

    /// The latest published state; cheap, safe from any thread.
    public var snapshot: EngineSnapshot { published.withLockedValue { $0 } }

    /// Registers a listener for steps and other events; called on the processing queue, so it must not block.
    public func onEvent(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        eventHandlers.withLockedValue { $0.append(handler) }
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
            self.source = (kind, description, .starting)
            self.demo = demo
            publish()
        }
    }

    // MARK: SampleSink

    public func receive(_ samples: [Sample]) {
        let arrival = Date()
        if let last = samples.last(where: SamplePlausibility.isPlausible) {
            pressureInbox.withLockedValue { $0.newestSampleTime = last.time }
        }
        queue.async { [self] in process(samples, arrivedAt: arrival) }
    }

    public func sourceStateChanged(_ state: SourceState) {
        queue.async { [self] in
            guard source.state != state else { return }
            if case .waiting(let reason) = state {
                // Expected on a board whose driver loads late: a notice, not a warning.
                logger.notice("source \(source.description): waiting for an accelerometer: \(reason)")
            } else if let reason = state.reason {
                logger.warning("source \(source.description): \(state.name): \(reason)")
            } else {
                logger.info("source \(source.description): \(state.name)")
            }
            source.state = state
            pressureInbox.withLockedValue { $0.batchesComing = state == .running }
            takeWaitingReadings()
            // No more samples will bring steps for the pressure readings held, nor tell the walk has stopped
            // (a replay that ended, a device gone).
            let change = state != .running ? floors.countHeld() : nil
            if let change { countToday(change, wall: wall(ofSampleTime: change.time)) }
            let s = publish()
            if let change { announce(change, wall: wall(ofSampleTime: change.time), snapshot: s) }
            if state != .running { endWalk(pauseDetectedAt: lastSampleWall) }
        }
    }

    public func samplesRejected(_ count: Int) {
        sourceRejected.withLockedValue { $0 += count }
    }

    public func sourceIdentified(kind: String, description: String) {
        queue.async { [self] in
            logger.debug("source: now \(kind) \(description) (was \(source.kind) \(source.description))")
            source.kind = kind
            source.description = description
            publish()
        }
    }

    // MARK: Other inputs

    /// The accelerometer's own step counter (IIO in_steps_input), reported beside ours in STEPS.
    /// The sensor's own counter, read at each refill: kept aside and published with the batch that follows
    /// at once, rather than costing the processing queue a wake-up of its own.
    public func hardwareStepsChanged(_ steps: Int) {
        latestHardwareSteps.withLockedValue { $0 = steps }
    }

    // MARK: BarometerSink (IIOBarometerSource, or a replay's pressure file)

    /// A barometer reading: from the first one on, floors are counted. The reading waits until the steps
    /// around it are known, the detector's hold-back after its time (StepAlignedFloors, as `stepd analyze`),
    /// and is counted with the batch of samples that brings them (`process`, which takes it from the inbox).
    public func receive(pressure: PressureReading) {
        let hop = pressureInbox.withLockedValue { inbox -> Bool in
            inbox.readings.append(pressure)
            return !inbox.batchesComing || inbox.readings.count > PressureInbox.mostWaiting
        }
        guard hop else { return }
        queue.async { [self] in
            guard let newest = takeWaitingReadings() else { return }
            // No step is coming for the readings held while the accelerometer is not running, or has sent
            // nothing for longer than the hold-back (both clocks are the monotonic one, or a replay's). Sent,
            // not processed: samples still queued behind this block bring the steps the readings wait for.
            let newestSample = pressureInbox.withLockedValue { $0.newestSampleTime }
            let stalled = source.state != .running || newest.time - newestSample > stepHoldBackSeconds
            let change = stalled ? floors.countHeld() : nil
            let changeWall = change.map { Date().addingTimeInterval($0.time - newest.time) }
            if let change, let changeWall { countToday(change, wall: changeWall) }
            let s = publish()
            if let change, let changeWall { announce(change, wall: changeWall, snapshot: s) }
        }
    }

    /// Moves the readings waiting in the inbox to the floor counter's hold; returns the newest.
    @discardableResult
    private func takeWaitingReadings() -> PressureReading? {
        dispatchPrecondition(condition: .onQueue(queue))
        let readings = pressureInbox.withLockedValue { inbox -> [PressureReading] in
            defer { inbox.readings.removeAll(keepingCapacity: true) }
            return inbox.readings
        }
        for reading in readings { floors.add(reading) }
        if let newest = readings.last { barometer.lastKilopascal = newest.kilopascal }
        return readings.last
    }

    /// Floors counted, into today's figures when they fall today.
    private func countToday(_ change: FloorChange, wall: Date) {
        day.floors(ascended: change.added.ascended, descended: change.added.descended, at: wall)
    }

    /// At local midnight today's figures start from zero, and PEDOMETER watchers (and MQTT) are told so even
    /// when no step comes (a batch that finds the new day first does the same). The deadline is on the monotonic
    /// clock, which costs the dispatch manager no wake-ups on the way; a clock set meanwhile is caught by the
    /// next batch, or by the timer firing early and going again for the time left.
    private func scheduleMidnight() {
        dispatchPrecondition(condition: .onQueue(queue))
        let timer = midnightTimer ?? {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.midnightPassed() }
            timer.activate()
            midnightTimer = timer
            return timer
        }()
        let wait = max(0, day.today.end.timeIntervalSinceNow) + 0.01
        timer.schedule(deadline: .now() + wait, leeway: .milliseconds(100))
    }

    private func midnightPassed() {
        dispatchPrecondition(condition: .onQueue(queue))
        defer { scheduleMidnight() }
        guard day.advance(to: Date(), calendar: dayCalendar) else { return }
        logger.debug("a new day: today's figures start from zero at \(Timestamp.string(day.today.start))")
        let s = publish()
        for handler in eventHandlers.withLockedValue({ $0 }) { handler(.pedometer(s)) }
    }

    /// Floors counted: news for the history and for PEDOMETER watchers even when no step follows them.
    private func announce(_ change: FloorChange, wall: Date, snapshot s: EngineSnapshot) {
        logger.debug("barometer: floors \(change.total.ascended) up, \(change.total.descended) down, at \(String(format: "%.1f", floors.counter.relativeAltitudeMeters ?? 0)) m")
        for handler in eventHandlers.withLockedValue({ $0 }) {
            handler(.floors(added: change.added, total: change.total, time: wall))
            handler(.pedometer(s))
        }
    }

    /// The wall-clock time of an instant on the samples' clock, from the newest sample's arrival.
    private func wall(ofSampleTime t: Double) -> Date { lastSampleWall.addingTimeInterval(t - lastSampleTime) }

    public func barometerStateChanged(_ state: SourceState) {
        queue.async { [self] in
            guard barometer.state != state else { return }
            let name = barometer.description.isEmpty ? "barometer" : "barometer \(barometer.description)"
            if case .waiting(let reason) = state {
                logger.notice("\(name): waiting for one: \(reason)")
            } else if case .unavailable(let reason) = state, barometer.kind == "none" {
                logger.debug("\(name): \(reason)")
            } else if let reason = state.reason {
                logger.warning("\(name): \(state.name): \(reason)")
            } else {
                logger.info("\(name): \(state.name)")
            }
            barometer.state = state
            publish()
        }
    }

    public func barometerIdentified(kind: String, description: String, rateHz: Double?) {
        queue.async { [self] in
            barometer.kind = kind
            barometer.description = description
            barometer.rateHz = rateHz
            publish()
        }
    }

    /// A stretch walked with a good GPS fix, to calibrate the stride.
    public func calibrateStride(gpsDistanceMeters: Double, steps: Int) {
        queue.async { [self] in
            if stride.calibrate(gpsDistanceMeters: gpsDistanceMeters, steps: steps) {
                logger.info("stride calibrated from GPS: \(String(format: "%.2f", stride.strideMeters)) m")
                publish()
            }
        }
    }

    // MARK: Requests

    /// Starts counting from zero now (the seed's reset button); replies with the fresh snapshot.
    public func reset(completion: @escaping @Sendable (EngineSnapshot) -> Void) {
        queue.async { [self] in
            steps = 0
            restoredSteps = 0
            since = Date()
            cadence.reset()
            activity.reset()
            floors.reset()
            let s = publish()
            for handler in resetHandlers.withLockedValue({ $0 }) { handler(since) }
            completion(s)
        }
    }

    // MARK: Persistence and supervision (the store, systemd's watchdog)

    /// Goes on from a count saved by an earlier run, with its floors when it had a barometer; called before
    /// the source starts. The floors show once this run's barometer gives a reading.
    public func restore(steps: Int, since: Date, floors saved: FloorCounts?) {
        queue.sync {
            self.steps = steps
            self.since = since
            restoredSteps = steps
            if let saved { floors.resume(from: saved) }
            publish()
        }
    }

    /// Rebuilds today's figures from what an earlier run saved of today (the store's minute bins since local
    /// midnight); called at start, before the source starts.
    public func restoreToday(_ minutes: [DayCounter.SavedMinute], floorsDescended: Int?) {
        queue.sync {
            if day.advance(to: Date(), calendar: dayCalendar) { scheduleMidnight() }
            day.restore(minutes, floorsDescended: floorsDescended)
            publish()
        }
    }

    /// Adds a count saved by an earlier run that the store could read only after counting had begun without
    /// it (a store away at start): STEPS goes on from the sum, never from 0 nor from the saved count alone, and
    /// so do the floors. `completion` gets the new count on the processing queue, so it reaches the store in
    /// order with the steps (floors nil while neither run has had a barometer).
    public func add(saved: (steps: Int, since: Date, floors: FloorCounts?),
                    completion: @escaping @Sendable (Int, Date, FloorCounts?) -> Void) {
        queue.async { [self] in
            steps += saved.steps
            restoredSteps += saved.steps
            since = min(since, saved.since)
            if let floorsSaved = saved.floors { floors.resume(from: floors.counter.counts + floorsSaved) }
            publish()
            completion(steps, since, floors.hasReadings || saved.floors != nil ? floors.counter.counts : nil)
        }
    }

    /// Registers a listener for resets (the new `since`); called on the processing queue, before the reply.
    public func onReset(_ handler: @escaping @Sendable (Date) -> Void) {
        resetHandlers.withLockedValue { $0.append(handler) }
    }

    /// Runs `body` on the processing queue: the watchdog's proof that the queue still drains.
    public func probe(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Waits until every batch handed over so far has been processed (used by shutdown and tests).
    public func drain() { queue.sync {} }

    // MARK: Processing (on `queue`)

    private func process(_ samples: [Sample], arrivedAt arrival: Date) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Clocks advance only with samples the pipeline keeps: an impossible one (NaN, 1e300) says nothing.
        guard let last = samples.last(where: SamplePlausibility.isPlausible) else {
            pipeline.process(samples) { _ in }
            publish()
            return
        }
        let handlers = eventHandlers.withLockedValue { $0 }
        let wantMotion = motionWanted.withLockedValue { $0 }
        // The batch's last sample arrived now; any instant on the sample clock is that far before it.
        func wall(_ t: Double) -> Date { arrival.addingTimeInterval(t - last.time) }
        var newSteps: [Double] = []
        pipeline.process(samples, onUniformSample: { uniform in
            let estimate = motion.update(uniform)
            lastMotion = estimate
            if wantMotion {
                for handler in handlers { handler(.motion(estimate, time: wall(uniform.time), sampleTime: uniform.time)) }
            }
        }, onStep: { newSteps.append($0) })
        lastSampleTime = last.time
        lastSampleWall = arrival
        measureRate(count: samples.count, until: last.time)
        if !newSteps.isEmpty { armStallTimer(lastStepAt: arrival) }
        let newDay = day.advance(to: arrival, calendar: dayCalendar)
        if newDay { scheduleMidnight() }
        for t in newSteps {
            steps += 1
            day.step(at: wall(t), distanceMeters: stride.strideMeters)
            floors.step(at: t)
            cadence.record(stepAt: t)
            if activity.step(at: t) == .walking {
                for handler in handlers { handler(.activity(.walking, time: wall(t))) }
            }
            for handler in handlers { handler(.step(count: steps, time: wall(t), strideMeters: stride.strideMeters)) }
        }
        takeWaitingReadings()
        let floorChange = floors.advance(to: last.time)
        if let floorChange { countToday(floorChange, wall: wall(floorChange.time)) }
        let pause = activity.advance(to: last.time)
        let s = publish()
        if let floorChange {
            announce(floorChange, wall: wall(floorChange.time), snapshot: s)
            lastPedometerPush = last.time
        }
        // The final figures of a walk go out before the word that it has stopped.
        if pause != nil || newDay || (!newSteps.isEmpty && last.time - lastPedometerPush >= 1) {
            lastPedometerPush = last.time
            for handler in handlers { handler(.pedometer(s)) }
        }
        if let (_, pauseStart) = pause {
            for handler in handlers { handler(.activity(.stationary, time: wall(pauseStart))) }
        }
    }

    /// Steps that stop with the samples (a source stalled without a word) would leave the cadence and the
    /// walk as they were. One timer fires once steps may have stopped for longer than the walk detector waits;
    /// if the samples did not end the walk meanwhile, it ends it here. A batch with steps only notes the time:
    /// rescheduling a dispatch timer wakes libdispatch's manager thread, which on every batch was a fourth
    /// wake-up per batch; instead the timer, when it fires during a walk, goes again for the time left.
    private func armStallTimer(lastStepAt wall: Date) {
        lastStepWall = wall
        if !stallTimerArmed { scheduleStallTimer(after: Self.stallSeconds) }
    }

    private func scheduleStallTimer(after seconds: Double) {
        let timer = stallTimer ?? {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.stallTimerFired() }
            timer.activate()
            stallTimer = timer
            return timer
        }()
        timer.schedule(deadline: .now() + seconds, leeway: .milliseconds(250))
        stallTimerArmed = true
    }

    /// Longer than ActivityTracker's 2.5 s pause and a buffered source's 0.7 s between batches.
    static let stallSeconds = 4.0

    private func stallTimerFired() {
        dispatchPrecondition(condition: .onQueue(queue))
        stallTimerArmed = false
        guard let lastStepWall else { return }
        let quiet = Date().timeIntervalSince(lastStepWall)
        if quiet < Self.stallSeconds - 0.5 { return scheduleStallTimer(after: Self.stallSeconds - quiet) }
        guard activity.state == .walking || cadence.stepsPerMinute(now: lastSampleTime) > 0 else { return }
        logger.debug("no step for \(Int(Self.stallSeconds)) s and no sample to say so: the walk ends here")
        endWalk(pauseDetectedAt: lastSampleWall)
    }

    private func measureRate(count: Int, until time: Double) {
        guard let start = rateWindowStart, time >= start else {
            rateWindowStart = time
            rateWindowCount = 0
            return
        }
        rateWindowCount += count
        if time - start >= 2 {
            rateInHz = Double(rateWindowCount) / (time - start)
            rateWindowStart = time
            rateWindowCount = 0
        }
    }

    /// Publishes the state for readers on other threads, and returns it for this queue's own events.
    @discardableResult
    private func publish() -> EngineSnapshot {
        dispatchPrecondition(condition: .onQueue(queue))
        var s = EngineSnapshot()
        s.steps = steps
        s.since = since
        s.end = lastSampleWall
        let cadenceNow = cadence.stepsPerMinute(now: lastSampleTime)
        s.cadenceStepsPerMinute = cadenceNow
        s.strideMeters = stride.strideMeters
        s.strideCalibrated = stride.isCalibrated
        s.distanceMeters = Double(steps) * stride.strideMeters
        s.activity = activity.state
        if cadenceNow > 0 { s.currentPaceSecondsPerMeter = 60 / (cadenceNow * stride.strideMeters) }
        // Active time is this run's only: steps restored from the store do not count towards the pace.
        let timedSteps = steps - restoredSteps
        if activity.activeSeconds > 0, timedSteps > 1 {
            s.averageActivePaceSecondsPerMeter = activity.activeSeconds / (Double(timedSteps - 1) * stride.strideMeters)
        }
        if floors.hasReadings {
            s.floorsAscended = floors.counter.ascended
            s.floorsDescended = floors.counter.descended
            s.relativeAltitudeMeters = floors.counter.relativeAltitudeMeters
        }
        s.barometer = barometer
        s.detector = pipeline.detector.name
        s.sourceKind = source.kind
        s.sourceDescription = source.description
        s.sourceState = source.state
        s.rateInHz = rateInHz
        s.rateOutHz = configuration.rateHz
        s.samplesIn = pipeline.samplesIn
        s.samplesOut = pipeline.samplesOut
        s.samplesRejected = pipeline.samplesRejected + sourceRejected.withLockedValue { $0 }
        s.demo = demo
        // A motion estimate is finite while the samples are; kept that way for JSON whatever comes.
        s.motion = lastMotion.flatMap { $0.gravity.magnitude.isFinite ? $0 : nil }
        s.hardwareSteps = latestHardwareSteps.withLockedValue { $0 }
        s.today = day.today
        published.withLockedValue { $0 = s }
        return s
    }
}
