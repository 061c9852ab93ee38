extension FloorCounter {
    /// The floors of a recording: the steps the pipeline found in it and its barometer's readings, on the
    /// same clock, walking as ActivityTracker says at each reading. This is what the daemon does live, where
    /// each reading takes the walking state of the moment it arrives (Engine.receive(pressure:)).
    public static func counting(stepTimes: [Double], pressure: [PressureReading],
                                parameters: Parameters = Parameters()) -> FloorCounter {
        var counter = FloorCounter(parameters: parameters)
        var activity = ActivityTracker()
        var next = 0
        for reading in pressure {
            while next < stepTimes.count, stepTimes[next] <= reading.time {
                _ = activity.step(at: stepTimes[next])
                next += 1
            }
            _ = activity.advance(to: reading.time)
            counter.update(time: reading.time, pressureKilopascal: reading.kilopascal,
                           walking: activity.state == .walking)
        }
        return counter
    }
}
