/// A walking bout in an analysis: steps in a row, none more than a pause after the one before.
public struct ActivityBout: Equatable, Sendable {
    /// The first and last step, seconds on the analysis clock.
    public var start: Double
    public var end: Double
    public var steps: Int

    public init(start: Double, end: Double, steps: Int) {
        self.start = start
        self.end = end
        self.steps = steps
    }

    public var durationSeconds: Double { end - start }

    /// Step intervals per minute from the first step to the last: (steps − 1) / duration × 60.
    public var cadenceStepsPerMinute: Double {
        durationSeconds > 0 ? Double(steps - 1) / durationSeconds * 60 : 0
    }
}

/// Finds walking bouts in a stream of step times.
///
/// A bout is a run of at least `minimumSteps` steps with no interval longer than `pauseSeconds` (the pause of
/// the daemon's ActivityTracker). Most walking in daily life comes in short bouts: half of all bouts are
/// under 12 steps (Orendurff et al., "How humans walk: bout duration, steps per bout, and rest duration",
/// J Rehabil Res Dev 2008), so the minimum is low, 10 steps, enough to leave out a shuffle at a desk.
/// A bout is closed once the clock is `pauseSeconds + holdSeconds` past its last step: a late-reported step
/// (a walk's first steps come at its confirmation) can still join it until then.
public struct ActivityBoutFinder: Sendable {
    public let pauseSeconds: Double
    public let minimumSteps: Int
    public let holdSeconds: Double
    private var current: ActivityBout?
    public private(set) var bouts = 0

    public init(pauseSeconds: Double = 2.5, minimumSteps: Int = 10, holdSeconds: Double = 30) {
        self.pauseSeconds = pauseSeconds
        self.minimumSteps = minimumSteps
        self.holdSeconds = holdSeconds
    }

    public mutating func step(at time: Double, emit: (ActivityBout) -> Void) {
        if var bout = current {
            if time >= bout.start - pauseSeconds && time <= bout.end + pauseSeconds {
                // The next step, or one reported late inside or just before the run.
                bout.start = min(bout.start, time)
                bout.end = max(bout.end, time)
                bout.steps += 1
                current = bout
                return
            }
            // A step from well before the run cannot start a bout any more: the clock has moved on.
            guard time > bout.end else { return }
            close(emit: emit)
        }
        current = ActivityBout(start: time, end: time, steps: 1)
    }

    public mutating func advance(to time: Double, emit: (ActivityBout) -> Void) {
        if let bout = current, time - bout.end > pauseSeconds + holdSeconds { close(emit: emit) }
    }

    public mutating func finish(emit: (ActivityBout) -> Void) { close(emit: emit) }

    private mutating func close(emit: (ActivityBout) -> Void) {
        if let bout = current, bout.steps >= minimumSteps {
            bouts += 1
            emit(bout)
        }
        current = nil
    }
}
