/// Cadence from the most recent steps: steps per minute over the last `windowSeconds` of the samples' clock.
public struct CadenceMeter {
    public let windowSeconds: Double
    /// Walking below about 30 steps a minute is not walking; a lone step after a pause gives no cadence.
    public let maximumGapSeconds: Double
    private var times: [Double] = []

    public init(windowSeconds: Double = 10, maximumGapSeconds: Double = 2) {
        self.windowSeconds = windowSeconds
        self.maximumGapSeconds = maximumGapSeconds
    }

    public mutating func record(stepAt time: Double) {
        times.append(time)
        if let first = times.first, time - first > windowSeconds {
            times.removeAll { time - $0 > windowSeconds }
        }
    }

    public mutating func reset() { times.removeAll() }

    /// Steps per minute at sample time `now`; 0 when the last step is older than the gap allowed.
    public func stepsPerMinute(now: Double) -> Double {
        guard let last = times.last, let first = times.first, times.count >= 2,
              now - last <= maximumGapSeconds, last > first else { return 0 }
        return Double(times.count - 1) / (last - first) * 60
    }
}
