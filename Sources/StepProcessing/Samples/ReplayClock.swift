/// When each sample of a recording is due on the wall clock, in a replay at `speed` times real time, and the
/// time it is played at: the recording's clock with its glitches taken out, which the pipeline and the engine see.
///
/// The recording's clock is followed while it moves forward by at most `maximumGapSeconds` from one sample
/// to the next. A jump further forward, or a time that is not a number, is a gap: nothing is waited for it, the
/// clock restarts at the sample after it, which is due at once, and the played time goes on `gapSeconds` after
/// the sample before. So a corrupt timestamp (a jump of 1e15 s) neither stalls the replay for ever nor asks for an
/// impossible deadline, and a day's jump forward does not put the steps before it a day in the past.
///
/// A jump back is a gap only once the sample after it confirms it (it follows on from the jump, not from the
/// samples before): a single row out of order is a glitch, due and played with the sample before it, and the
/// rest of the file keeps its place on the clock it had.
public struct ReplayClock: Sendable {
    public let speed: Double
    public let maximumGapSeconds: Double
    /// How much played time a gap takes: the longest pause followed (a minute). Longer than the resampler's
    /// interpolation (0.5 s) and the walking gate's confirmation (10 s), so that the pipeline ends a walk there
    /// and counts as `stepd analyze` does on the recording's own clock; short enough that a step confirmed just
    /// after a gap is stamped at most a minute early.
    public let gapSeconds: Double
    private var anchorRecording = 0.0
    private var anchorWall = 0.0
    private var lastTime: Double?
    private var lastDue = 0.0
    /// A time behind `lastTime` not yet known to be a glitch or a jump back.
    private var pendingBack: Double?
    /// The played time is the recording's time plus this (changed at each gap).
    public private(set) var offsetSeconds = 0.0
    /// The played time of the newest sample followed (glitches are played at it).
    public private(set) var lastPlayed = 0.0
    /// Gaps crossed so far.
    public private(set) var gaps = 0
    /// Single rows whose time went back and were played with the sample before them.
    public private(set) var glitches = 0

    /// A pause in a real recording (the sensor stalled, the phone slept) is replayed as it was while it is
    /// shorter than a minute; longer is more likely a broken clock than a pause worth waiting for.
    public static let defaultMaximumGapSeconds = 60.0

    public init(speed: Double = 1, maximumGapSeconds: Double = ReplayClock.defaultMaximumGapSeconds,
                gapSeconds: Double = ReplayClock.defaultMaximumGapSeconds) {
        precondition(speed > 0 && speed.isFinite, "speed must be a positive number")
        self.speed = speed
        self.maximumGapSeconds = maximumGapSeconds
        self.gapSeconds = gapSeconds
    }

    /// The wall instant (on the caller's clock, in seconds) at which the sample at recording time `time` is
    /// due, the time it is played at, and whether a gap or a glitch comes with it. `now` is the wall clock,
    /// used for the first sample.
    public mutating func due(_ time: Double, now: Double) -> (wall: Double, played: Double, afterGap: Bool) {
        // A time that is not a number says nothing about when: due with the sample before it, left as it is
        // (the pipeline refuses it).
        guard time.isFinite else { return (lastTime == nil ? now : lastDue, time, false) }
        guard let last = lastTime else {
            offsetSeconds = 0
            restart(at: time, wall: now)
            lastPlayed = time
            return (now, time, false)
        }
        let step = time - last
        if step >= 0 && step <= maximumGapSeconds {
            pendingBack = nil
            return follow(time)
        }
        if let back = pendingBack, time - back >= 0, time - back <= maximumGapSeconds {
            // The row before was not a glitch: the recording's clock went back there. It was played at
            // `lastPlayed`; the clock restarts at it, a gap later.
            pendingBack = nil
            gaps += 1
            offsetSeconds = lastPlayed + gapSeconds - back
            restart(at: back, wall: lastDue)
            return (follow(time).wall, lastPlayed, true)
        }
        if step < 0 {
            pendingBack = time
            glitches += 1
            return (lastDue, lastPlayed, true)
        }
        gaps += 1
        pendingBack = nil
        offsetSeconds = lastPlayed + gapSeconds - time
        restart(at: time, wall: lastDue)
        lastPlayed = time + offsetSeconds
        return (lastDue, lastPlayed, true)
    }

    private mutating func follow(_ time: Double) -> (wall: Double, played: Double, afterGap: Bool) {
        lastTime = time
        lastDue = anchorWall + (time - anchorRecording) / speed
        lastPlayed = time + offsetSeconds
        return (lastDue, lastPlayed, false)
    }

    private mutating func restart(at time: Double, wall: Double) {
        anchorRecording = time
        anchorWall = wall
        lastTime = time
        lastDue = wall
    }
}
