import Foundation

/// A second-order IIR section (direct form I), with Butterworth designs from R. Bristow-Johnson's
/// "Audio EQ Cookbook" (bilinear transform, Q = 1/sqrt(2)).
public struct Biquad: Sendable {
    public let b0, b1, b2, a1, a2: Double
    private var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    public static func lowPass(cutoffHz: Double, sampleRateHz: Double, q: Double = 0.5.squareRoot()) -> Biquad {
        let w = 2 * Double.pi * cutoffHz / sampleRateHz
        let alpha = sin(w) / (2 * q), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: (1 - c) / 2 / a0, b1: (1 - c) / a0, b2: (1 - c) / 2 / a0,
                      a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    public static func highPass(cutoffHz: Double, sampleRateHz: Double, q: Double = 0.5.squareRoot()) -> Biquad {
        let w = 2 * Double.pi * cutoffHz / sampleRateHz
        let alpha = sin(w) / (2 * q), c = cos(w), a0 = 1 + alpha
        return Biquad(b0: (1 + c) / 2 / a0, b1: -(1 + c) / a0, b2: (1 + c) / 2 / a0,
                      a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    /// Sets the state as if `value` had been the input forever, so a constant start does not ring.
    public mutating func settle(at value: Double) {
        let gain = (b0 + b1 + b2) / (1 + a1 + a2)
        x1 = value; x2 = value
        y1 = value * gain; y2 = y1
    }

    public mutating func reset() { x1 = 0; x2 = 0; y1 = 0; y2 = 0 }

    @inlinable
    public mutating func apply(_ x: Double) -> Double {
        applyImplementation(x)
    }

    @usableFromInline
    mutating func applyImplementation(_ x: Double) -> Double {
        let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        x2 = x1; x1 = x
        y2 = y1; y1 = y
        return y
    }
}
