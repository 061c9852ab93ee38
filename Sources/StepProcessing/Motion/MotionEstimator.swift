import Foundation

/// The seismometer's view of the uniform sample stream: where gravity points, what is left when it is removed,
/// and how much the device shakes.
public struct MotionEstimate: Equatable, Sendable {
    /// The gravity estimate in the device's (board's) axes, m/s^2.
    public var gravity: Vector3
    /// Rotation about the x axis, degrees: 0 when the device lies flat face up.
    public var pitchDegrees: Double
    /// Rotation about the y axis, degrees.
    public var rollDegrees: Double
    /// Acceleration along gravity with gravity removed, m/s^2, up positive.
    public var verticalAcceleration: Double
    /// Root mean square of the acceleration magnitude's fast part (above ~5 Hz) over the last second, m/s^2.
    public var vibrationRMS: Double
}

/// Gravity by a slow low-pass of the acceleration (0.3 Hz: slower than any step, fast enough to follow a turn
/// of the wrist within a few seconds), tilt from gravity, vibration from what a 5 Hz high-pass leaves.
public struct MotionEstimator: Sendable {
    private var gravityFilter: LowPassFilter
    private var vibrationFilter: Biquad
    private var started = false
    private var window: [Double]
    private var windowIndex = 0
    private var windowSum = 0.0

    public init(sampleRateHz: Double = 60, gravityCutoffHz: Double = 0.3, vibrationCutoffHz: Double = 5) {
        gravityFilter = LowPassFilter(cutoffHz: gravityCutoffHz, sampleRateHz: sampleRateHz)
        vibrationFilter = .highPass(cutoffHz: vibrationCutoffHz, sampleRateHz: sampleRateHz)
        window = Array(repeating: 0, count: max(1, Int(sampleRateHz.rounded())))
    }

    public mutating func reset() {
        gravityFilter.reset()
        started = false
        for i in window.indices { window[i] = 0 }
        windowSum = 0
        windowIndex = 0
    }

    public mutating func update(_ sample: Sample) -> MotionEstimate {
        let a = sample.acceleration
        let gravity = gravityFilter.apply(a)
        let magnitude = a.magnitude
        if !started {
            vibrationFilter.settle(at: magnitude)
            started = true
        }
        let fast = vibrationFilter.apply(magnitude)
        // A running sum of squares over one second; recomputed exactly each lap to keep rounding from drifting.
        windowSum += fast * fast - window[windowIndex]
        window[windowIndex] = fast * fast
        windowIndex += 1
        if windowIndex == window.count {
            windowIndex = 0
            windowSum = window.reduce(0, +)
        }
        let g = gravity.magnitude
        let vertical = g > 0 ? a.dot(gravity) / g - g : 0
        return MotionEstimate(gravity: gravity,
                              pitchDegrees: Self.degrees(atan2(gravity.y, gravity.z)),
                              rollDegrees: Self.degrees(atan2(-gravity.x, (gravity.y * gravity.y + gravity.z * gravity.z).squareRoot())),
                              verticalAcceleration: vertical,
                              vibrationRMS: (max(windowSum, 0) / Double(window.count)).squareRoot())
    }

    static func degrees(_ radians: Double) -> Double { radians * 180 / .pi }
}
