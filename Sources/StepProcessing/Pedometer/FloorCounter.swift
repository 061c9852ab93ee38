import Foundation

/// Floors climbed from barometric pressure, counted like CMPedometer's floorsAscended/floorsDescended:
/// about 3 m of height a floor, and only height gained or lost on foot.
///
/// Three stages, each answering one way a barometer's height goes wrong (docs/barometer.md has the sources):
/// 1. A running median over `medianSeconds` of the heights the barometric formula gives. A median keeps a
///    steady climb as it is (the median of a monotonic run is its middle) but ignores any spike shorter than
///    half the window: a door slam or a gust of wind (tens of Pa for a second or two) moves the height by
///    2-3 m for that long and then returns.
/// 2. A height change counts only while walking (the walking flag of the reading, from the step detector)
///    and only while the height moves at a stair's pace: at least `minimumClimbRate` (20 times the fastest
///    weather drift, 1 hPa/h ≈ 0.0023 m/s) and at most `maximumClimbRate`. An elevator or a car on a hill
///    adds nothing (no steps), and a day of weather while walking on the flat adds nothing (too slow).
/// 3. Hysteresis: a floor counts once the walked height is `countingHeight` from the level of the last
///    floor counted, and that level then moves by a whole `floorHeight`. A climb that ends short of a floor
///    is forgotten after `climbEndSeconds` without climbing, so small remainders never add up to a floor.
public struct FloorCounter: Sendable {
    public struct Parameters: Sendable {
        /// Height of a floor (m). Apple: "approximately 3 meters" (CMPedometer.floorsAscended); storeys are
        /// 2.7-3.5 m floor to floor in homes and offices.
        public var floorHeight = 3.0
        /// Walked height that counts a floor (m): a floor less the half metre the barometer's relative
        /// accuracy over minutes allows for (BMP280: ±0.12 hPa ≈ ±1 m over its range, far less over a minute).
        public var countingHeight = 2.5
        /// Spike rejection: a median over this window ignores spikes shorter than half of it (s).
        public var medianSeconds = 6.0
        /// The vertical speed on foot is the height walked over this long (s).
        public var slopeSeconds = 4.0
        /// Slowest climb that counts (m/s): stairs climbed slowly are ~0.15 m/s; weather drifts at most
        /// ~0.0023 m/s (1 hPa an hour), so 0.05 m/s leaves a margin of 20 on that side and 3 on the other.
        public var minimumClimbRate = 0.05
        /// Fastest climb that counts (m/s): stairs at a walking pace take 0.15-0.6 m/s, stair-race winners
        /// average ~0.6 m/s (Empire State Building Run-Up: 320 m in under 10 min). Lifts run from under 1 m/s
        /// to 6 m/s, so the slow ones fall inside the band: only the missing steps leave them out.
        public var maximumClimbRate = 1.2
        /// A climb ends after this long without climbing; what it left short of a floor is dropped (s).
        public var climbEndSeconds = 30.0
        public init() {}
    }

    public let parameters: Parameters
    public var floorHeightMeters: Double { parameters.floorHeight }
    public private(set) var ascended = 0
    public private(set) var descended = 0
    public var counts: FloorCounts { FloorCounts(ascended: ascended, descended: descended) }
    /// CMAltimeter's relativeAltitude: the filtered height (m) relative to the first one since start or reset.
    public private(set) var relativeAltitudeMeters: Double?

    private struct Reading { var time: Double; var height: Double; var walking: Bool }
    private struct Step { var time: Double; var height: Double }
    /// Raw readings of the last `medianSeconds`, at least the last three.
    private var window: [Reading] = []
    /// Whether a reading has left the window since the start (or a gap): the window then spans all of
    /// `medianSeconds` that the readings' pace lets it, however sparse they are.
    private var windowSlid = false
    /// Height changes walked in the last `slopeSeconds` and not yet counted as climbing.
    private var walked: [Step] = []
    private var lastFiltered: Reading?
    private var origin: Double?
    /// Height walked up (positive) or down since start, and the level of the last floor counted.
    private var walkedHeight = 0.0
    private var countedLevel = 0.0
    private var lastClimbTime: Double?

    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Height above the 1013.25 hPa level from the international barometric formula (ICAO standard atmosphere).
    public static func altitudeMeters(pressureKilopascal: Double) -> Double {
        44330.77 * (1 - pow(pressureKilopascal / 101.325, 0.190263))
    }

    /// The inverse: pressure (kPa) at `altitude` metres in the standard atmosphere.
    public static func pressureKilopascal(altitudeMeters altitude: Double) -> Double {
        101.325 * pow(1 - altitude / 44330.77, 1 / 0.190263)
    }

    /// Counts from zero again; the relative altitude starts from the current height.
    public mutating func reset() {
        ascended = 0
        descended = 0
        countedLevel = walkedHeight
        origin = lastFiltered?.height
        relativeAltitudeMeters = origin == nil ? nil : 0
    }

    /// Goes on from floors counted by an earlier run since the last reset (the history database's counter).
    public mutating func resume(from counts: FloorCounts) {
        ascended = counts.ascended
        descended = counts.descended
    }

    /// Feeds one reading: `time` in seconds on any steady clock, pressure in kPa (as IIO's `in_pressure`),
    /// and whether the walker was walking then. Readings outside 10-120 kPa (no place people walk) are ignored.
    public mutating func update(time: Double, pressureKilopascal: Double, walking: Bool) {
        guard pressureKilopascal > 10, pressureKilopascal < 120, time.isFinite else { return }
        if let last = window.last, time <= last.time { return }
        // After a gap longer than the window (the barometer unplugged), nothing spans it: no height change
        // across the gap is walked, whatever the weather did meanwhile.
        if let last = window.last, time - last.time > parameters.medianSeconds {
            window.removeAll()
            walked.removeAll()
            lastFiltered = nil
            windowSlid = false
        }
        window.append(Reading(time: time, height: Self.altitudeMeters(pressureKilopascal: pressureKilopascal),
                              walking: walking))
        // The last `medianSeconds`, and never fewer than three readings: readings 5 s apart (a still wearer's
        // batches) would leave two in the window, and no median; three of them span 10 s, and a spike of a few
        // seconds still touches only one.
        while window.count > 3, let oldest = window.first, oldest.time < time - parameters.medianSeconds {
            window.removeFirst()
            windowSlid = true
        }
        // Wait for a full window: the median of a few readings is not yet robust to a spike. Full is 80 % of
        // it, or, for readings as sparse as the sensor counter mode's (every 2 s: three in 6 s, the oldest 4 s
        // back), a window that has begun to slide.
        guard let first = window.first, window.count >= 3,
              time - first.time >= parameters.medianSeconds * 0.8 || windowSlid else { return }
        // The median stands for the window's middle instant, with the walking state of the reading nearest it.
        // Timed by the newest reading, so the filtered heights' clock always advances and their differences
        // add up to the whole change in height (no step of the median is left out).
        let heights = window.map(\.height).sorted()
        let centre = time - parameters.medianSeconds / 2
        let middle = window.min { abs($0.time - centre) < abs($1.time - centre) } ?? window[window.count / 2]
        filtered(Reading(time: centre, height: heights[heights.count / 2], walking: middle.walking))
    }

    private mutating func filtered(_ point: Reading) {
        defer { lastFiltered = point }
        if origin == nil { origin = point.height }
        relativeAltitudeMeters = point.height - (origin ?? point.height)
        guard let previous = lastFiltered, point.time > previous.time else { return }
        // Only a stretch walked from end to end moves the walker; the rest (an elevator, a car) is left out.
        if previous.walking && point.walking {
            walked.append(Step(time: point.time, height: point.height - previous.height))
        }
        walked.removeAll { $0.time <= point.time - parameters.slopeSeconds }
        // The vertical speed on foot over the last `slopeSeconds`: a stair's pace commits what was walked.
        let rate = walked.reduce(0) { $0 + $1.height } / parameters.slopeSeconds
        if abs(rate) >= parameters.minimumClimbRate, abs(rate) <= parameters.maximumClimbRate {
            walkedHeight += walked.reduce(0) { $0 + $1.height }
            walked.removeAll()
            lastClimbTime = point.time
            countFloors()
        } else if let end = lastClimbTime, point.time - end > parameters.climbEndSeconds, walkedHeight != countedLevel {
            // Short of a floor and over: forget the remainder.
            countedLevel = walkedHeight
        }
    }

    private mutating func countFloors() {
        while walkedHeight - countedLevel >= parameters.countingHeight {
            ascended += 1
            countedLevel += parameters.floorHeight
        }
        while countedLevel - walkedHeight >= parameters.countingHeight {
            descended += 1
            countedLevel -= parameters.floorHeight
        }
    }
}

/// Floors up and down: a count since the last reset, or what one stretch of readings added.
public struct FloorCounts: Sendable, Equatable {
    public var ascended: Int
    public var descended: Int

    public init(ascended: Int, descended: Int) {
        self.ascended = ascended
        self.descended = descended
    }

    public static let zero = FloorCounts(ascended: 0, descended: 0)

    public static func + (a: FloorCounts, b: FloorCounts) -> FloorCounts {
        FloorCounts(ascended: a.ascended + b.ascended, descended: a.descended + b.descended)
    }

    public static func - (a: FloorCounts, b: FloorCounts) -> FloorCounts {
        FloorCounts(ascended: a.ascended - b.ascended, descended: a.descended - b.descended)
    }
}
