import Dispatch
import Foundation
import StepProcessing
import StepProtocol
import Timekeeping

/// What the processing queue owns: the pipeline and every figure it counts. The engine holds it in a mutex
/// (`Engine.state`) that only work running on its queue takes (`Engine.withState`), so the lock is never
/// contended; it is what lets the compiler check that no other thread reaches this state.
struct EngineState {
    let pipeline: StepPipeline
    var steps = 0
    /// The distance since the reset: each step's own stride added as it is counted (as today's distance is), so a
    /// stride calibrated by GPS changes only the steps after it and the total never falls.
    var distanceMeters = 0.0
    var since: Date
    var cadence = CadenceMeter()
    var activity = ActivityTracker()
    var stride: StrideModel
    var motion: MotionEstimator
    var lastMotion: MotionEstimate?
    /// Pressure readings held until the steps around them are known, counted into floors as `stepd analyze`
    /// counts them (StepAlignedFloors); no floors in the snapshot before a reading comes.
    var floors: StepAlignedFloors
    var barometer = BarometerState()
    var lastSampleTime = 0.0
    var lastSampleWall: Date
    var lastPedometerPush = -Double.infinity
    var rate = RateMeter()
    var source: (kind: String, description: String, state: SourceState) = ("none", "", .starting)
    var demo = false
    /// Samples the source's device took and lost before the source read them, and when the last loss began.
    var samplesLost = 0
    var samplesLostAt: Date?
    /// Fires when steps stop coming without samples to tell it (a source that stalls): Engine+Timers.swift.
    var stallDeadline: (any ClockTimer)?
    var lastStepWall: Date?
    /// Today's figures (since local midnight in the daemon's zone), and the timer that starts the next day at
    /// midnight when no batch comes to do it (a source stopped, or none).
    var day: DayCounter
    var midnightTimer: (any ClockTimer)?
    /// Steps taken over from the store at start (see `Engine.restore`); zero after a reset.
    var restoredSteps = 0
    /// Whether the store had floors for the count taken over (an earlier run had a barometer).
    var restoredFloors = false
    /// Position (Location/Engine+Location.swift), published apart from the step snapshot.
    var locationTracker: LocationTracker
    /// Why the saved track and visits could not be read at start; nil when they were (or none was asked for).
    var locationRestoreError: String?
    /// When the gpsd source last went from connected (or from the start) to unavailable; nil while connected.
    var gpsUnavailableSince: Date?
    /// Walking bouts, found from the steps as `stepd analyze` finds them, and the signal their gait is measured on.
    var bouts = ActivityBoutFinder()
    var gait: GaitRecorder
    /// The GPS state the journal last said (`stale` included, which only a deadline notices), and the
    /// deadline that fires when a fix grows stale (Engine+Location.swift).
    var gpsLoggedState: String?
    var gpsStaleDeadline: (any ClockTimer)?

    init(configuration: Engine.Configuration, zone: LocalZone, now: Date) {
        since = now
        lastSampleWall = now
        pipeline = StepPipeline(detector: configuration.detector.make(sampleRateHz: configuration.rateHz,
                                                                      placement: configuration.placement),
                                rateHz: configuration.rateHz)
        floors = StepAlignedFloors(holdBackSeconds: pipeline.detector.longestReportDelaySeconds)
        stride = StrideModel(heightMeters: configuration.heightMeters)
        motion = MotionEstimator(sampleRateHz: configuration.rateHz)
        day = DayCounter(now: now, zone: zone)
        locationTracker = LocationTracker(configuration: configuration.location)
        var gaitConfiguration = GaitRecorder.Configuration()
        gaitConfiguration.rateHz = configuration.rateHz
        gaitConfiguration.placement = configuration.placement
        gaitConfiguration.heightMeters = configuration.heightMeters
        gait = GaitRecorder(configuration: gaitConfiguration)
    }

    /// The wall-clock time of an instant on the samples' clock, from the newest sample's arrival.
    func wall(ofSampleTime t: Double) -> Date { lastSampleWall.addingTimeInterval(t - lastSampleTime) }

    /// The state as readers on other threads see it. `sourceRejected` and `hardwareSteps` come from the
    /// sources' threads, through the engine's locks.
    func snapshot(rateOutHz: Double, sourceRejected: Int, hardwareSteps: Int?) -> EngineSnapshot {
        var s = EngineSnapshot()
        s.steps = steps
        s.since = since
        s.end = lastSampleWall
        let cadenceNow = cadence.stepsPerMinute(now: lastSampleTime)
        s.cadenceStepsPerMinute = cadenceNow
        s.strideMeters = stride.strideMeters
        s.strideCalibrated = stride.isCalibrated
        s.distanceMeters = distanceMeters
        s.activity = activity.state
        if cadenceNow > 0 { s.currentPaceSecondsPerMeter = 60 / (cadenceNow * stride.strideMeters) }
        // Active time is this run's only: steps restored from the store do not count towards the pace.
        let timedSteps = steps - restoredSteps
        if activity.activeSeconds > 0, timedSteps > 1 {
            s.averageActivePaceSecondsPerMeter = activity.activeSeconds / (Double(timedSteps - 1) * stride.strideMeters)
        }
        // Floors once a barometer is there, from the count the store saved or 0 until its first reading, so that
        // every STEPS carries them; and, while it is not yet known whether there is one, when the store had some.
        if floors.hasReadings || barometer.kind != "none" || (barometer.state == .starting && restoredFloors) {
            s.floorsAscended = floors.counter.ascended
            s.floorsDescended = floors.counter.descended
            s.relativeAltitudeMeters = floors.counter.relativeAltitudeMeters
        }
        s.barometer = barometer
        s.detector = pipeline.detector.name
        s.sourceKind = source.kind
        s.sourceDescription = source.description
        s.sourceState = source.state
        s.rateInHz = rate.inHz
        s.rateOutHz = rateOutHz
        s.samplesIn = pipeline.samplesIn
        s.samplesOut = pipeline.samplesOut
        s.samplesRejected = pipeline.samplesRejected + sourceRejected
        s.samplesLost = samplesLost
        s.samplesLostAt = samplesLostAt
        s.demo = demo
        // A motion estimate is finite while the samples are; kept that way for JSON whatever comes.
        s.motion = lastMotion.flatMap { $0.gravity.magnitude.isFinite ? $0 : nil }
        s.hardwareSteps = hardwareSteps
        s.today = day.today
        return s
    }
}

/// The rate samples come in at, over windows of 2 s on the samples' clock.
struct RateMeter {
    private var windowStart: Double?
    private var windowCount = 0
    private(set) var inHz = 0.0

    mutating func measure(count: Int, until time: Double) {
        guard let start = windowStart, time >= start else {
            windowStart = time
            windowCount = 0
            return
        }
        windowCount += count
        if time - start >= 2 {
            inHz = Double(windowCount) / (time - start)
            windowStart = time
            windowCount = 0
        }
    }
}
