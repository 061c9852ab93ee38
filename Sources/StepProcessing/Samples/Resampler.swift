/// Puts samples with irregular timestamps onto a uniform grid by linear interpolation.
///
/// Streaming and causal: a grid point is produced as soon as a sample at or after it has arrived, so feeding
/// the same samples in any batching gives the same output. Sources may stall (a USB hiccup, a suspended
/// laptop): across a gap longer than `maximumGapSeconds` nothing is invented and the grid restarts at the
/// next sample.
public struct Resampler: Sendable {
    public let rateHz: Double
    public let maximumGapSeconds: Double
    private let period: Double
    private var previous: Sample?
    /// Index of the next grid point to emit, counted from `origin`; the product keeps times exact over days.
    private var origin = 0.0
    private var nextIndex = 0.0

    public init(rateHz: Double = 60, maximumGapSeconds: Double = 0.5) {
        precondition(rateHz > 0, "rate must be positive")
        self.rateHz = rateHz
        self.maximumGapSeconds = maximumGapSeconds
        self.period = 1 / rateHz
    }

    /// The number of grid restarts caused by gaps or by time going backwards.
    public private(set) var restarts = 0

    public mutating func reset() {
        previous = nil
        restarts = 0
    }

    /// Feeds one input sample; calls `emit` for every grid sample it completes.
    @inlinable
    public mutating func push(_ sample: Sample, emit: (Sample) -> Void) {
        pushImplementation(sample, emit: emit)
    }

    @usableFromInline
    mutating func pushImplementation(_ sample: Sample, emit: (Sample) -> Void) {
        guard let last = previous else {
            start(at: sample, emit: emit)
            return
        }
        let span = sample.time - last.time
        if span <= 0 {
            // A repeated timestamp adds nothing; a clock that jumps back starts a new grid.
            if span < 0 { restarts += 1; start(at: sample, emit: emit) }
            return
        }
        if span > maximumGapSeconds {
            restarts += 1
            start(at: sample, emit: emit)
            return
        }
        var t = origin + nextIndex * period
        while t <= sample.time {
            let w = (t - last.time) / span
            let a = last.acceleration, b = sample.acceleration
            emit(Sample(time: t, acceleration: Vector3(x: a.x + (b.x - a.x) * w,
                                                       y: a.y + (b.y - a.y) * w,
                                                       z: a.z + (b.z - a.z) * w)))
            nextIndex += 1
            t = origin + nextIndex * period
        }
        previous = sample
    }

    private mutating func start(at sample: Sample, emit: (Sample) -> Void) {
        origin = sample.time
        nextIndex = 1
        previous = sample
        emit(sample)
    }
}
