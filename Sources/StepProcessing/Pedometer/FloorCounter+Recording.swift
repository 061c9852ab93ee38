extension FloorCounter {
    /// The floors of a recording: the steps the pipeline found in it and its barometer's readings, on the
    /// same clock, walking as ActivityTracker says at each reading. This is what the daemon does live, where
    /// each reading takes the walking state of the moment it arrives (Engine.receive(pressure:)).
    public static func counting(stepTimes: [Double], pressure: [PressureReading],
                                parameters: Parameters = Parameters()) -> FloorCounter {
        var tally = RecordingFloors(pressure: pressure, parameters: parameters)
        for t in stepTimes { tally.step(at: t) }
        return tally.finish()
    }
}

/// Floors of a recording whose steps arrive as a streaming pass finds them (`stepd analyze`): each
/// pressure reading is counted once every step before it is known, so the result equals
/// `FloorCounter.counting` over the whole list. The readings are few (1-5 Hz) and are held in full.
public struct RecordingFloors: Sendable {
    /// Longer than the step detector holds a step back (a bout's first steps are found when it is
    /// confirmed, up to ~10 s later): readings this far behind the newest sample wait no longer.
    public static let stepHoldBackSeconds = 30.0

    private var counter: FloorCounter
    private var activity = ActivityTracker()
    private let pressure: [PressureReading]
    private var next = 0

    public init(pressure: [PressureReading], parameters: FloorCounter.Parameters = .init()) {
        self.pressure = pressure
        counter = FloorCounter(parameters: parameters)
    }

    /// A step at `t`: the readings before it are counted first (with the steps before them).
    public mutating func step(at t: Double) {
        feedReadings { $0 < t }
        _ = activity.step(at: t)
    }

    /// The pass has read samples up to `time`: readings older than the hold-back can take no new step.
    public mutating func advance(to time: Double) {
        feedReadings { $0 <= time - Self.stepHoldBackSeconds }
    }

    /// The pass ended: every reading left is counted.
    public mutating func finish() -> FloorCounter {
        feedReadings { _ in true }
        return counter
    }

    private mutating func feedReadings(while isDue: (Double) -> Bool) {
        while next < pressure.count, isDue(pressure[next].time) {
            let reading = pressure[next]
            _ = activity.advance(to: reading.time)
            counter.update(time: reading.time, pressureKilopascal: reading.kilopascal,
                           walking: activity.state == .walking)
            next += 1
        }
    }
}
