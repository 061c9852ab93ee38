import Foundation

/// A small deterministic generator (SplitMix64), so that noise is exact and repeatable on every platform
/// rather than drawn from the system's random source: `stepd bench --jitter-ms` (ClockJitter) moves a
/// recording's timestamps with it, and the tests draw their noise from it, so that a failing fuzz run can be
/// repeated.
public struct SplitMix: Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Uniform in [low, high).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * nextUnit() }

    /// Standard normal, by Box–Muller.
    public mutating func gaussian() -> Double {
        let u = max(nextUnit(), 1e-300), v = nextUnit()
        return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
    }
}
