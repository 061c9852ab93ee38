import Foundation

/// Today's figures as a phone shows them: what was walked since local midnight, apart from the count since the
/// last reset. Pure: the caller says what time it is and which zone draws the day.
public struct DayTotals: Sendable, Equatable {
    /// Local midnight, and the next one: the day the figures belong to.
    public var start: Date
    public var end: Date
    /// The zone that drew the day, for showing `start` as a local time.
    public var zone: LocalZone
    public var steps = 0
    public var distanceMeters = 0.0
    public var floorsAscended = 0
    public var floorsDescended = 0
    /// Steps in each Unix minute of the day (at most 1,440 keys), from which the active minutes are counted;
    /// the store's minute bins are the same minutes, so a restart rebuilds them exactly.
    public var stepsPerMinute: [Int64: Int] = [:]

    /// A minute is active when it holds this many steps: half a minute's walking at the slowest cadence the
    /// detectors follow (60 steps/min), so a phone picked up or a few steps to the door do not count.
    public static let activeMinuteSteps = 30

    /// Minutes of the day with at least `activeMinuteSteps` steps (as Google Fit's move minutes, a minute of
    /// walking is a minute whatever its pace).
    public var activeMinutes: Int { stepsPerMinute.values.reduce(0) { $0 + ($1 >= Self.activeMinuteSteps ? 1 : 0) } }

    public init(start: Date, end: Date, zone: LocalZone) {
        self.start = start
        self.end = end
        self.zone = zone
    }

    public func contains(_ time: Date) -> Bool { time >= start && time < end }

    static func minute(of time: Date) -> Int64 { Int64((time.timeIntervalSince1970 / 60).rounded(.down)) }
}

/// Keeps `DayTotals` for the day that holds "now" in the given zone. Midnight starts a new day with zeros,
/// whether it passes while walking (a step before it stays with yesterday, one after it counts today) or while
/// standing still; a zone change or a clock set to another day also starts the day again, as no figure of the
/// old day can be told to belong to the new one.
public struct DayCounter: Sendable {
    public private(set) var today: DayTotals
    private var zone: LocalZone

    public init(now: Date, zone: LocalZone) {
        self.zone = zone
        today = Self.emptyDay(holding: now, zone: zone)
    }

    /// The day (local midnight to the next) that holds `time` in `zone`.
    public static func day(holding time: Date, zone: LocalZone) -> DateInterval {
        zone.interval(of: .day, containing: time)
    }

    private static func emptyDay(holding time: Date, zone: LocalZone) -> DayTotals {
        let day = day(holding: time, zone: zone)
        return DayTotals(start: day.start, end: day.end, zone: zone)
    }

    /// Moves on to the day that holds `now` in `zone`; returns true when the day changed (its figures are then
    /// zero). A zone whose midnight falls elsewhere starts another day; one with the same midnight keeps it.
    @discardableResult
    public mutating func advance(to now: Date, zone: LocalZone) -> Bool {
        let zoneChanged = zone != self.zone
        self.zone = zone
        guard zoneChanged || !today.contains(now) else { return false }
        let day = Self.day(holding: now, zone: zone)
        guard day.start != today.start || day.end != today.end else {
            today.zone = zone  // another name for the same day (the same offset)
            return false
        }
        today = DayTotals(start: day.start, end: day.end, zone: zone)
        return true
    }

    /// A step at `time` (wall clock): counted when it falls in today; one before midnight is yesterday's, and
    /// a step after the day's end moves the count on to its day first.
    public mutating func step(at time: Date, distanceMeters: Double) {
        if time >= today.end { advance(to: time, zone: zone) }
        guard today.contains(time) else { return }
        today.steps = today.steps.addingSaturated(1)
        today.distanceMeters += distanceMeters
        let index = DayTotals.minute(of: time)
        today.stepsPerMinute[index] = (today.stepsPerMinute[index] ?? 0).addingSaturated(1)
    }

    /// Floors counted from a reading at `time`.
    public mutating func floors(ascended: Int, descended: Int, at time: Date) {
        if time >= today.end { advance(to: time, zone: zone) }
        guard today.contains(time) else { return }
        today.floorsAscended += ascended
        today.floorsDescended += descended
    }

    /// One minute of history saved by an earlier run (a store's minute bin), for rebuilding today at start.
    public struct SavedMinute: Sendable, Equatable {
        public var start: Date
        public var steps: Int
        public var distanceMeters: Double
        public var floorsAscended: Int?
        public init(start: Date, steps: Int, distanceMeters: Double, floorsAscended: Int?) {
            self.start = start
            self.steps = steps
            self.distanceMeters = distanceMeters
            self.floorsAscended = floorsAscended
        }
    }

    /// Adds what an earlier run saved of today: the minutes that start within the day, and the floors down when
    /// they are known (the history keeps only the floors up; the count since a reset made today has both).
    public mutating func restore(_ minutes: [SavedMinute], floorsDescended: Int?) {
        for minute in minutes where today.contains(minute.start) {
            // Saturating: the store refuses counts out of range, and a count at the bound still does not trap.
            today.steps = today.steps.addingSaturated(minute.steps)
            today.distanceMeters += minute.distanceMeters
            today.floorsAscended = today.floorsAscended.addingSaturated(minute.floorsAscended ?? 0)
            if minute.steps > 0 {
                let index = DayTotals.minute(of: minute.start)
                today.stepsPerMinute[index] = (today.stepsPerMinute[index] ?? 0).addingSaturated(minute.steps)
            }
        }
        today.floorsDescended = today.floorsDescended.addingSaturated(floorsDescended ?? 0)
    }
}
