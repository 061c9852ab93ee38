/// Stride length: from the walker's height until GPS has measured it.
///
/// Height rule: stride ≈ 0.414 × height (a common pedometer rule of thumb). Calibration: while walking with a
/// good fix, GPS distance over a stretch of steps gives a measured stride; the model moves towards it with
/// weight growing with the stretch's length, so one short noisy stretch cannot ruin it.
public struct StrideModel: Sendable, Equatable {
    public let heightMeters: Double
    public private(set) var strideMeters: Double
    public private(set) var calibratedSteps = 0

    /// Human walking strides lie within these bounds; a GPS stretch outside them is a bad measurement.
    public static let plausibleStrideMeters = 0.3...1.6

    public init(heightMeters: Double = 1.70) {
        self.heightMeters = heightMeters
        strideMeters = 0.414 * heightMeters
    }

    public var isCalibrated: Bool { calibratedSteps > 0 }

    /// Feeds a stretch walked with a good GPS fix; returns false if it was implausible and ignored.
    @discardableResult
    public mutating func calibrate(gpsDistanceMeters: Double, steps: Int) -> Bool {
        guard steps >= 20, gpsDistanceMeters > 0 else { return false }
        let measured = gpsDistanceMeters / Double(steps)
        guard Self.plausibleStrideMeters.contains(measured) else { return false }
        let weight = Double(steps) / Double(steps + max(calibratedSteps, 100))
        strideMeters += (measured - strideMeters) * weight
        calibratedSteps += steps
        return true
    }
}
