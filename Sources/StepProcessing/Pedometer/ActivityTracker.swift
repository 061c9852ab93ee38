/// Walking or standing still, as CMPedometerEvent's pause and resume: walking from the first step of a run of
/// steps, stationary once no step has come for `pauseSeconds`. Also keeps the active time for average pace.
public struct ActivityTracker: Sendable {
    public enum State: String, Sendable, CaseIterable { case walking, stationary }

    /// Walking cadence rarely drops under 60 steps a minute; 2.5 s without a step is a pause.
    public let pauseSeconds: Double
    public private(set) var state: State = .stationary
    public private(set) var lastStepTime: Double?
    private var boutStart: Double?
    /// Seconds spent walking in finished bouts, plus steps in them.
    private var finishedActiveSeconds = 0.0

    public init(pauseSeconds: Double = 2.5) { self.pauseSeconds = pauseSeconds }

    public mutating func reset() {
        state = .stationary
        lastStepTime = nil
        boutStart = nil
        finishedActiveSeconds = 0
    }

    /// Records a step at `time`; returns `.walking` when this step starts walking.
    public mutating func step(at time: Double) -> State? {
        defer { lastStepTime = max(lastStepTime ?? time, time) }
        if state == .stationary {
            state = .walking
            boutStart = time
            return .walking
        }
        return nil
    }

    /// Advances the clock; returns `.stationary` (with the instant the pause began) when walking stops.
    public mutating func advance(to time: Double) -> (State, at: Double)? {
        guard state == .walking, let last = lastStepTime, time - last > pauseSeconds else { return nil }
        state = .stationary
        finishedActiveSeconds += last - (boutStart ?? last)
        boutStart = nil
        return (.stationary, last)
    }

    /// Seconds of walking so far, the current bout up to its last step included.
    public var activeSeconds: Double {
        var total = finishedActiveSeconds
        if state == .walking, let start = boutStart, let last = lastStepTime { total += last - start }
        return total
    }
}
