import Foundation
import StepProcessing
import StepProtocol

/// What the processing queue publishes for the socket server to read without touching pipeline state.
public struct EngineSnapshot: Sendable {
    public var steps = 0
    public var since = Date(timeIntervalSince1970: 0)
    /// The wall-clock time of the newest sample processed.
    public var end = Date(timeIntervalSince1970: 0)
    public var cadenceStepsPerMinute = 0.0
    public var distanceMeters = 0.0
    public var strideMeters = 0.0
    public var strideCalibrated = false
    /// Seconds per metre at the current cadence; nil while not walking.
    public var currentPaceSecondsPerMeter: Double?
    /// Seconds per metre over the time spent walking since `since`; nil before any walking.
    public var averageActivePaceSecondsPerMeter: Double?
    public var activity: ActivityTracker.State = .stationary
    public var floorsAscended: Int?
    public var floorsDescended: Int?
    /// The barometer, and CMAltimeter's relativeAltitude: metres since the first reading (or the last reset).
    public var barometer = BarometerState()
    public var relativeAltitudeMeters: Double?
    public var detector = ""
    public var sourceKind = "none"
    public var sourceDescription = ""
    public var sourceState: SourceState = .starting
    public var rateInHz = 0.0
    public var rateOutHz = 0.0
    public var samplesIn = 0
    public var samplesOut = 0
    /// Samples dropped as impossible: by the pipeline (SamplePlausibility) and by the source (IIO glitches).
    public var samplesRejected = 0
    /// Samples the device took that never reached the daemon (an overrun buffer), and when the last loss began.
    public var samplesLost = 0
    public var samplesLostAt: Date?
    /// The bundled demo recording plays: its steps go to a throwaway history.
    public var demo = false
    public var motion: MotionEstimate?
    /// The accelerometer's hardware step counter, when it has one.
    public var hardwareSteps: Int?
    /// Since local midnight in the daemon's zone (DayCounter).
    public var today = DayTotals(start: Date(timeIntervalSince1970: 0), end: Date(timeIntervalSince1970: 0), zone: .utc)
}

/// The barometer as STATUS shows it: what it is, its state (SourceState, as the accelerometer's), its rate.
public struct BarometerState: Sendable, Equatable {
    /// `iio`, `replay`, or `none` (disabled, or a replay without a pressure file).
    public var kind = "none"
    public var description = ""
    public var state: SourceState = .starting
    public var rateHz: Double?
    public var lastKilopascal: Double?
    public init() {}
}

/// What the engine tells the parts that follow it (the store records, the server pushes to watchers, the fleet
/// publishes). The lifecycle registers each (`Engine.register`) and unregisters it at stop.
public protocol EngineObserver: AnyObject, Sendable {
    /// On the processing queue, after the engine's state lock is released, in the order things happened, each
    /// observer after those registered before it. It must not block: the queue counts the steps.
    func engine(_ engine: Engine, emitted event: EngineEvent)
}

/// Something that happened on the processing queue that watchers may want pushed to them.
public enum EngineEvent: Sendable {
    /// A step: the running count after it, the wall-clock instant it happened, and its length (the stride
    /// then: the distance it adds).
    case step(count: Int, time: Date, strideMeters: Double)
    /// The barometer counted floors: how many it added up and down since the last such event (or the reset),
    /// the totals since the reset after them, and the wall-clock time of the reading that completed the last
    /// of them (up to the detector's hold-back before it was counted: StepAlignedFloors).
    case floors(added: FloorCounts, total: FloorCounts, time: Date)
    /// A new position or a visit that began or ended (Location/LocationTracker.swift).
    case location(LocationEvent)
    /// Walking started or stopped.
    case activity(ActivityTracker.State, time: Date)
    /// The pedometer's figures changed (at most once a second while walking, and when walking stops).
    case pedometer(EngineSnapshot)
    /// A walking bout ended (half a minute after its last step, when no late step can join it), with its gait
    /// measures and the wall-clock times of its first and last step.
    case bout(GaitBout, start: Date, end: Date, placement: Placement)
    /// One sample of the uniform grid's motion estimate; sent only while someone watches MOTION.
    case motion(MotionEstimate, time: Date, sampleTime: Double)
    /// The count was reset: it starts from zero at `since` (told before the client's reply).
    case reset(since: Date)
    /// A point added to the path or a visit that began or ended, for the store.
    case record(LocationRecord)
}

extension EngineSnapshot {
    /// STEPS' and PEDOMETER's `today`, rounded as the counts since the reset; floors only while the counts since
    /// the reset have them (a barometer is present).
    public var todayMessage: TodayMessage {
        let floors = floorsAscended != nil
        return TodayMessage(since: Timestamp.string(today.start, in: today.zone), steps: today.steps,
                            distance_m: (today.distanceMeters * 100).rounded() / 100,
                            floors_ascended: floors ? today.floorsAscended : nil,
                            floors_descended: floors ? today.floorsDescended : nil, active_min: today.activeMinutes)
    }
}
