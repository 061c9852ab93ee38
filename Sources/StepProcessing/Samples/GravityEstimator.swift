/// Gravity in the sample's axes: a slow first-order low-pass of the acceleration, alpha = dt / (dt + RC),
/// with dt taken from the samples' own times so it works at any input rate. A 2 s time constant keeps
/// walking (about 2 Hz) out of it while following a change of posture within a few seconds.
public struct GravityEstimator: Sendable {
    public let timeConstantSeconds: Double
    public private(set) var gravity: Vector3?
    private var lastTime: Double?

    public init(timeConstantSeconds: Double = 2) {
        precondition(timeConstantSeconds > 0, "the time constant must be positive")
        self.timeConstantSeconds = timeConstantSeconds
    }

    public mutating func update(with sample: Sample) {
        guard let g = gravity, let last = lastTime else {
            gravity = sample.acceleration
            lastTime = sample.time
            return
        }
        let dt = sample.time - last
        guard dt > 0 else { return }
        let alpha = dt / (dt + timeConstantSeconds)
        gravity = g + (sample.acceleration - g) * alpha
        lastTime = sample.time
    }

    public mutating func update(with samples: [Sample]) {
        for s in samples { update(with: s) }
    }
}
