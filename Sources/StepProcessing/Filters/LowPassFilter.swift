/// First-order RC low-pass, one per axis, as in the seed: alpha = dt / (dt + RC), RC = 1 / (2 pi fc).
public struct LowPassFilter: Sendable {
    public let alpha: Double
    private var state: Vector3?

    public init(cutoffHz: Double, sampleRateHz: Double) {
        precondition(cutoffHz > 0 && sampleRateHz > 0, "cutoff and rate must be positive")
        let dt = 1 / sampleRateHz
        let rc = 1 / (2 * Double.pi * cutoffHz)
        alpha = dt / (dt + rc)
    }

    public mutating func reset() { state = nil }

    /// The first sample initialises the state, so a filter started under gravity does not ring up from zero.
    @inlinable
    public mutating func apply(_ input: Vector3) -> Vector3 {
        applyImplementation(input)
    }

    @usableFromInline
    mutating func applyImplementation(_ input: Vector3) -> Vector3 {
        guard let y = state else {
            state = input
            return input
        }
        let next = y + (input - y) * alpha
        state = next
        return next
    }
}
