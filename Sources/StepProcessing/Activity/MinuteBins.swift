/// One minute of a recording: its steps, how long of it was spent walking and at what cadence.
///
/// A minute is `[60 × index, 60 × index + 60)` seconds on the analysis clock (the recording's own clock, or
/// Unix time when the recording's start is known), so minutes line up with the wall clock's.
public struct MinuteBin: Equatable, Sendable {
    public var index: Int
    public var steps = 0
    /// Seconds of the minute inside walking: between two steps at most `pauseSeconds` apart.
    public var walkingSeconds = 0.0
    /// Seconds of the minute the recording covers (samples no further apart than a gap).
    public var recordedSeconds = 0.0
    /// Step intervals inside the minute, each counted by the fraction of it that falls in the minute.
    var intervals = 0.0

    public init(index: Int) { self.index = index }

    public var startSeconds: Double { Double(index) * 60 }

    /// Steps per minute while walking: step intervals per second of walking, × 60. The time-weighted mean of
    /// each step's cadence (60 / its interval), so a minute with 20 s of walking at 110 steps/min says 110, not
    /// the 37 of its step count; 0 in a minute without walking.
    public var cadenceStepsPerMinute: Double {
        walkingSeconds > 0 ? intervals / walkingSeconds * 60 : 0
    }
}

/// Streams steps and recorded time into minute bins, and hands each minute over once no later step can fall
/// in it.
///
/// Steps arrive up to a detector's report delay after their time (a walk's first steps at its confirmation,
/// about 10 s; docs/step-detection.md), so a minute stays open until the clock is `holdSeconds` past its end.
/// A step that still arrives for a minute already handed over (it cannot with the detectors we have) is
/// counted in the oldest open minute, so that the minutes always add up to the total. Memory: the open
/// minutes only, a few whatever the recording's length.
public struct MinuteAggregator: Sendable {
    public let pauseSeconds: Double
    public let holdSeconds: Double
    /// Open minutes, oldest first.
    private var open: [MinuteBin] = []
    /// Minutes before this index have been handed over.
    private var closedBefore = Int.min
    private var lastStep: Double?
    public private(set) var totalSteps = 0
    /// Steps that arrived after their minute was handed over (see above).
    public private(set) var lateSteps = 0

    /// `pauseSeconds`: 2.5 s without a step is a pause, as the daemon's ActivityTracker says.
    public init(pauseSeconds: Double = 2.5, holdSeconds: Double = 120) {
        self.pauseSeconds = pauseSeconds
        self.holdSeconds = holdSeconds
    }

    private static func minute(_ t: Double) -> Int { Int(flooringClamped: t / 60) }

    /// The open bin for minute `index`, created in order; nil if that minute was handed over already.
    private mutating func binIndex(_ index: Int) -> Int? {
        guard index >= closedBefore else { return nil }
        var i = open.count
        while i > 0 && open[i - 1].index > index { i -= 1 }
        if i > 0 && open[i - 1].index == index { return i - 1 }
        open.insert(MinuteBin(index: index), at: i)
        return i
    }

    /// Adds `[from, to)` to the recorded time.
    public mutating func cover(from: Double, to: Double) {
        spread(from: from, to: to) { bin, seconds in bin.recordedSeconds += seconds }
    }

    /// Counts a step at `time`, and the walking since the step before when it is no more than a pause ago.
    public mutating func step(at time: Double) {
        totalSteps += 1
        let index = Self.minute(time)
        if let i = binIndex(index) {
            open[i].steps += 1
        } else {
            lateSteps += 1
            if open.isEmpty { open.append(MinuteBin(index: closedBefore)) }
            open[0].steps += 1
        }
        if let last = lastStep, time > last, time - last <= pauseSeconds {
            let interval = time - last
            spread(from: last, to: time) { bin, seconds in
                bin.walkingSeconds += seconds
                bin.intervals += seconds / interval
            }
        }
        if time >= (lastStep ?? -.infinity) { lastStep = time }
    }

    /// Applies `body` to each minute that `[from, to)` overlaps, with the seconds of overlap.
    private mutating func spread(from: Double, to: Double, _ body: (inout MinuteBin, Double) -> Void) {
        guard to > from else { return }
        var start = from
        while start < to {
            let index = Self.minute(start)
            // Where a double no longer resolves the minute's end past `start`, the rest goes to this minute:
            // the loop always ends.
            let boundary = Double(index + 1) * 60
            let end = boundary > start ? min(to, boundary) : to
            if let i = binIndex(index) { body(&open[i], end - start) }
            start = end
        }
    }

    /// Hands over, oldest first, every minute that ends at least `holdSeconds` before `time`.
    public mutating func advance(to time: Double, emit: (MinuteBin) -> Void) {
        let cutoff = Self.minute(time - holdSeconds)   // minutes before this one are complete
        var handed = 0
        while handed < open.count && open[handed].index < cutoff {
            emit(open[handed])
            handed += 1
        }
        if handed > 0 { open.removeFirst(handed) }
        closedBefore = max(closedBefore, cutoff)
    }

    /// Hands over every open minute: the recording has ended.
    public mutating func finish(emit: (MinuteBin) -> Void) {
        for bin in open { emit(bin) }
        if let last = open.last { closedBefore = last.index + 1 }
        open.removeAll()
    }
}
