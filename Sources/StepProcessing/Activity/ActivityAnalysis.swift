/// Turns a recording's steps into what activity research reports: minutes, walking bouts and days.
///
/// Streaming and pure: the caller feeds recorded spans and step times in the recording's order, advances the
/// clock after each batch, and receives finished minutes and bouts as they complete; days are kept (one
/// small record a day) and read at the end. Memory does not grow with the recording's length but with its days.
public struct ActivityAnalysis: Sendable {
    public struct Configuration: Sendable {
        /// Added to the recording's clock to give the analysis clock: the Unix time of the recording's t = 0
        /// when it is known, else 0 (minutes and days then count from the recording's own zero).
        public var clockOffsetSeconds = 0.0
        public var pauseSeconds = 2.5
        public var minimumBoutSteps = 10
        /// The day a minute belongs to, from its start on the analysis clock. Default: whole days of 86,400 s
        /// from zero (UTC days for Unix time).
        public var dayOf: @Sendable (Double) -> Int = { Int(flooringClamped: $0 / 86_400) }

        public init() {}
    }

    public let configuration: Configuration
    private var minutes: MinuteAggregator
    private var boutFinder: ActivityBoutFinder
    private var daysByKey: [Int: DaySummary] = [:]
    /// The day of the minute starting at `cachedDayStart` ... `cachedDayEnd`: a calendar is asked once a day.
    private var cachedDay: (start: Double, end: Double, day: Int)?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        minutes = MinuteAggregator(pauseSeconds: configuration.pauseSeconds)
        boutFinder = ActivityBoutFinder(pauseSeconds: configuration.pauseSeconds, minimumSteps: configuration.minimumBoutSteps)
    }

    public var totalSteps: Int { minutes.totalSteps }
    public var lateSteps: Int { minutes.lateSteps }
    public var bouts: Int { boutFinder.bouts }

    /// The days seen so far, in order.
    public var days: [DaySummary] { daysByKey.values.sorted { $0.day < $1.day } }

    /// The recording covers `[from, to)` (recording clock).
    public mutating func cover(from: Double, to: Double) {
        let offset = configuration.clockOffsetSeconds
        minutes.cover(from: from + offset, to: to + offset)
    }

    /// A step at `time` (recording clock).
    public mutating func step(at time: Double, bout: (ActivityBout) -> Void) {
        let t = time + configuration.clockOffsetSeconds
        minutes.step(at: t)
        var finished: [ActivityBout] = []
        boutFinder.step(at: t) { finished.append($0) }
        hand(finished, bout)
    }

    /// The recording has reached `time` (recording clock): hands over the minutes and bouts now complete.
    public mutating func advance(to time: Double, minute: (MinuteBin) -> Void, bout: (ActivityBout) -> Void) {
        let t = time + configuration.clockOffsetSeconds
        var bouts: [ActivityBout] = [], bins: [MinuteBin] = []
        boutFinder.advance(to: t) { bouts.append($0) }
        minutes.advance(to: t) { bins.append($0) }
        hand(bouts, bout)
        hand(bins, minute)
    }

    public mutating func finish(minute: (MinuteBin) -> Void, bout: (ActivityBout) -> Void) {
        var bouts: [ActivityBout] = [], bins: [MinuteBin] = []
        boutFinder.finish { bouts.append($0) }
        minutes.finish { bins.append($0) }
        hand(bouts, bout)
        hand(bins, minute)
    }

    // Finished pieces are collected first and counted here: the finders cannot call back into self.
    private mutating func hand(_ bouts: [ActivityBout], _ emit: (ActivityBout) -> Void) {
        for finished in bouts {
            let key = day(of: finished.start)
            daysByKey[key, default: DaySummary(day: key)].bouts += 1
            emit(finished)
        }
    }

    private mutating func hand(_ bins: [MinuteBin], _ emit: (MinuteBin) -> Void) {
        for bin in bins {
            let key = day(of: bin.startSeconds)
            daysByKey[key, default: DaySummary(day: key)].add(bin)
            emit(bin)
        }
    }

    private mutating func day(of time: Double) -> Int {
        if let cached = cachedDay, time >= cached.start, time < cached.end { return cached.day }
        let day = configuration.dayOf(time)
        // The day's span, found a minute at a time outward; days are at most 25 hours.
        var start = (time / 60).rounded(.down) * 60, end = start + 60
        // `start - 60 < start`: where a double no longer resolves a minute, the span is that one minute.
        while start - time > -90_000, start - 60 < start, configuration.dayOf(start - 60) == day { start -= 60 }
        while end - time < 90_000, end + 60 > end, configuration.dayOf(end) == day { end += 60 }
        cachedDay = (start, end, day)
        return day
    }
}
