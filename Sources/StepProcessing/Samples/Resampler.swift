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
    /// A sample whose time went back, not yet known to be a glitch or a clock set back.
    private var pendingBack: Sample?
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
        pendingBack = nil
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
            // A repeated timestamp adds nothing. A time behind the last is held: a single row out of order is
            // dropped when the next one follows on from the rows before it; a clock that went back (the next
            // one follows on from the held one) starts a new grid at it.
            guard span < 0 else { return }
            if let back = pendingBack, sample.time >= back.time {
                pendingBack = nil
                restarts += 1
                start(at: back, emit: emit)
                pushImplementation(sample, emit: emit)
            } else {
                pendingBack = sample
            }
            return
        }
        pendingBack = nil
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
