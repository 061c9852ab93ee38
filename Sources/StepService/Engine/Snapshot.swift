import Foundation
import StepAcquisition

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
}

/// Something that happened on the processing queue that watchers may want pushed to them.
public enum EngineEvent: Sendable {
    /// A step: the running count after it and the wall-clock instant it happened.
    case step(count: Int, time: Date)
    /// A new position or a visit that began or ended (Location/LocationTracker.swift).
    case location(LocationEvent)
}
