/// When each sample of a recording is due on the wall clock, in a replay at `speed` times real time.
///
/// The recording's clock is followed while it moves forward by at most `maximumGapSeconds` from one sample
/// to the next. A jump further forward, any jump back, or a time that is not a number is a gap: nothing is
/// waited for it, and the clock restarts at the sample after it, which is due at once. So a corrupt
/// timestamp (a jump of 1e15 s) neither stalls the replay for ever nor asks for an impossible deadline.
public struct ReplayClock: Sendable {
    public let speed: Double
    public let maximumGapSeconds: Double
    private var anchorRecording = 0.0
    private var anchorWall = 0.0
    private var lastTime: Double?
    private var lastDue = 0.0
    /// Gaps crossed so far.
    public private(set) var gaps = 0

    /// A pause in a real recording (the sensor stalled, the phone slept) is replayed as it was while it is
    /// shorter than a minute; longer is more likely a broken clock than a pause worth waiting for.
    public static let defaultMaximumGapSeconds = 60.0

    public init(speed: Double = 1, maximumGapSeconds: Double = ReplayClock.defaultMaximumGapSeconds) {
        precondition(speed > 0 && speed.isFinite, "speed must be a positive number")
        self.speed = speed
        self.maximumGapSeconds = maximumGapSeconds
    }

    /// The wall instant (on the caller's clock, in seconds) at which the sample at recording time `time`
    /// is due, and whether a gap comes before it. `now` is the wall clock, used for the first sample.
    public mutating func due(_ time: Double, now: Double) -> (wall: Double, afterGap: Bool) {
        // A time that is not a number says nothing about when: due with the sample before it.
        guard time.isFinite else { return (lastTime == nil ? now : lastDue, false) }
        guard let last = lastTime else {
            restart(at: time, wall: now)
            return (now, false)
        }
        let step = time - last
        guard step >= 0, step <= maximumGapSeconds else {
            gaps += 1
            restart(at: time, wall: lastDue)
            return (lastDue, true)
        }
        lastTime = time
        lastDue = anchorWall + (time - anchorRecording) / speed
        return (lastDue, false)
    }

    private mutating func restart(at time: Double, wall: Double) {
        anchorRecording = time
        anchorWall = wall
        lastTime = time
        lastDue = wall
    }
}
