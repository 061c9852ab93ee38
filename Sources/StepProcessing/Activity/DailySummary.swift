/// One day of a recording, as physical-activity research reports it.
public struct DaySummary: Equatable, Sendable {
    /// The day's key from the analysis's calendar (days since 1970-01-01 in local time, or days of the recording).
    public var day: Int
    public var steps = 0
    public var walkingSeconds = 0.0
    /// Minutes with any recorded time: a day's wear time, to tell a quiet day from a recorder left off.
    public var recordedMinutes = 0
    /// Walking bouts that start on the day.
    public var bouts = 0
    /// The 30 highest minute step counts, highest first.
    public private(set) var topMinutes: [Int] = []

    public init(day: Int) { self.day = day }

    /// Peak 1-minute cadence: the day's highest steps in one minute.
    public var peakOneMinuteStepsPerMinute: Int? { topMinutes.first }

    /// Peak 30-minute cadence: the mean of the day's 30 highest minute step counts, not necessarily
    /// consecutive (Tudor-Locke et al., "Peak stepping cadence in free-living adults: 2005-2006 NHANES",
    /// J Phys Act Health 2012; as stepcount's CadencePeak30). Nil on a day with fewer than 30 recorded minutes.
    public var peakThirtyMinuteStepsPerMinute: Double? {
        guard recordedMinutes >= DaySummary.peakMinutes, topMinutes.count == DaySummary.peakMinutes else { return nil }
        return Double(topMinutes.reduce(0, +)) / Double(DaySummary.peakMinutes)
    }

    static let peakMinutes = 30

    mutating func add(_ minute: MinuteBin) {
        steps += minute.steps
        walkingSeconds += minute.walkingSeconds
        if minute.recordedSeconds > 0 { recordedMinutes += 1 }
        // Keep the 30 highest counts, highest first, in one pass: a minute is at most 30 comparisons.
        guard topMinutes.count < DaySummary.peakMinutes || minute.steps > topMinutes[topMinutes.count - 1] else { return }
        var i = topMinutes.count
        while i > 0 && topMinutes[i - 1] < minute.steps { i -= 1 }
        topMinutes.insert(minute.steps, at: i)
        if topMinutes.count > DaySummary.peakMinutes { topMinutes.removeLast() }
    }
}
