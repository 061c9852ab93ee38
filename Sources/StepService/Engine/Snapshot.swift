import Foundation
import StepAcquisition
import StepProcessing

/// What the processing queue publishes for the socket server to read without touching pipeline state.
public struct EngineSnapshot: Sendable {
    public var steps = 0
    public var since = Date()
    public var cadenceStepsPerMinute = 0.0
    public var distanceMeters = 0.0
    public var detector = ""
    public var sourceKind = "none"
    public var sourceDescription = ""
    public var sourceState: SourceState = .starting
    public var rateInHz = 0.0
    public var rateOutHz = 0.0
    public var samplesIn = 0
    public var samplesOut = 0
    /// Gravity in the board's axes (m/s^2), nil before the first sample.
    public var gravity: Vector3?
    /// The sensor's hardware step counter, when it has one.
    public var hardwareSteps: Int?
}

/// Something that happened on the processing queue that watchers may want pushed to them.
public enum EngineEvent: Sendable {
    /// A step: the running count after it and the wall-clock instant it happened.
    case step(count: Int, time: Date)
}
