/// Floors from pressure readings and steps that arrive late: the one way both the daemon
/// (Engine.receive(pressure:)) and `stepd analyze` count floors, so that the two agree.
///
/// FloorCounter counts height only between readings taken while walking, but a step detector reports a
/// bout's first steps only once the bout is confirmed, up to `StepDetector.longestReportDelaySeconds` later
/// (10 s for the peak detector). Deciding at a reading's arrival would take a climb begun from standing for
/// an elevator ride for those seconds. So readings are held until every step up to their time is known: the
/// caller says how far its samples have come (`advance(to:)`), readings older than that less the hold-back
/// are counted, and a reading is walking when a step fell in the `pauseSeconds` before it (ActivityTracker's
/// walking state, decided from the steps' own times whatever order they came in). Floors thus lag the
/// stairs by up to the hold-back.
public struct StepAlignedFloors: Sendable {
    /// ActivityTracker's pause: walking until this long after a step.
    public static let pauseSeconds = ActivityTracker().pauseSeconds

    /// How long after its time a step may be reported: the detector's `longestReportDelaySeconds`.
    public let holdBackSeconds: Double
    public private(set) var counter: FloorCounter
    /// Whether any reading came: without one there are no floors to report (no barometer).
    public private(set) var hasReadings = false

    /// Readings not counted yet, oldest first, from `firstHeld` on.
    private var held: [PressureReading] = []
    private var firstHeld = 0
    /// Step times that may still decide a held or later reading, in order.
    private var stepTimes: [Double] = []
    /// The time of the last reading counted.
    private var lastCounted: Double?

    public init(holdBackSeconds: Double, parameters: FloorCounter.Parameters = .init()) {
        self.holdBackSeconds = holdBackSeconds
        counter = FloorCounter(parameters: parameters)
    }

    /// A recording's barometer, read in full beforehand (`stepd analyze`).
    public init(pressure: [PressureReading], holdBackSeconds: Double, parameters: FloorCounter.Parameters = .init()) {
        self.init(holdBackSeconds: holdBackSeconds, parameters: parameters)
        held = pressure
        hasReadings = !pressure.isEmpty
    }

    /// Readings waiting for their steps.
    public var heldCount: Int { held.count - firstHeld }

    /// A reading, in time order; counted once the steps around it are known.
    public mutating func add(_ reading: PressureReading) {
        held.append(reading)
        hasReadings = true
    }

    /// A step at `time` (a step's own time, however late the detector reports it).
    public mutating func step(at time: Double) {
        if let last = stepTimes.last, time < last {
            stepTimes.insert(time, at: stepTimes.firstIndex { $0 > time } ?? stepTimes.endIndex)
        } else {
            stepTimes.append(time)
        }
    }

    /// Samples have come up to `sampleTime`: every step before `sampleTime - holdBackSeconds` is known, so
    /// the readings up to then are counted. Returns what they added.
    @discardableResult
    public mutating func advance(to sampleTime: Double) -> FloorChange? {
        count(until: sampleTime - holdBackSeconds)
    }

    /// No step will come for the readings held (the accelerometer stopped or says nothing): all are counted.
    @discardableResult
    public mutating func countHeld() -> FloorChange? {
        count(until: .infinity)
    }

    /// The end of a recording: every reading counted.
    public mutating func finish() -> FloorCounter {
        countHeld()
        return counter
    }

    /// Counts from zero again (FloorCounter.reset); readings held are counted into the new period, as steps
    /// reported after a reset are.
    public mutating func reset() { counter.reset() }

    /// Goes on from the floors an earlier run counted since the last reset.
    public mutating func resume(from counts: FloorCounts) { counter.resume(from: counts) }

    private mutating func count(until bound: Double) -> FloorChange? {
        let before = counter.counts
        var changedAt: Double?
        while firstHeld < held.count, held[firstHeld].time <= bound {
            let reading = held[firstHeld]
            let counted = counter.counts
            counter.update(time: reading.time, pressureKilopascal: reading.kilopascal, walking: isWalking(at: reading.time))
            if counter.counts != counted { changedAt = reading.time }
            lastCounted = reading.time
            firstHeld += 1
        }
        // Drop what is spent, in bulk rather than per reading.
        if firstHeld > 64, firstHeld * 2 > held.count {
            held.removeFirst(firstHeld)
            firstHeld = 0
        }
        // The next reading to count is the first held, or one still to come, later than the bound (or than
        // the last counted when all were): it needs only the steps of the pause before it.
        let next = firstHeld < held.count ? held[firstHeld].time : bound.isFinite ? bound : lastCounted ?? -.infinity
        let keep = stepTimes.firstIndex { $0 >= next - Self.pauseSeconds } ?? stepTimes.endIndex
        if keep > 0 { stepTimes.removeFirst(keep) }
        guard let changedAt else { return nil }
        return FloorChange(added: counter.counts - before, total: counter.counts, time: changedAt)
    }

    /// Walking at `time`: a step in the pause before it (ActivityTracker's state at that instant).
    private func isWalking(at time: Double) -> Bool {
        guard let index = stepTimes.lastIndex(where: { $0 <= time }) else { return false }
        return time - stepTimes[index] <= Self.pauseSeconds
    }
}

/// Floors counted by one `StepAlignedFloors` call: how many it added, the totals after, and the time (on the
/// readings' clock) of the reading that completed the last of them.
public struct FloorChange: Sendable, Equatable {
    public var added: FloorCounts
    public var total: FloorCounts
    public var time: Double
}

extension FloorCounter {
    /// The floors of a recording: the steps the pipeline found in it and its barometer's readings, on the
    /// same clock, every step known before any reading is counted (StepAlignedFloors, as the daemon and
    /// `stepd analyze` count them).
    public static func counting(stepTimes: [Double], pressure: [PressureReading],
                                parameters: Parameters = Parameters()) -> FloorCounter {
        var floors = StepAlignedFloors(pressure: pressure, holdBackSeconds: .infinity, parameters: parameters)
        for t in stepTimes { floors.step(at: t) }
        return floors.finish()
    }
}
