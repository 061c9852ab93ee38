import Foundation

/// Floors climbed from barometric pressure, like CMPedometer's floorsAscended: about 3 m of height a floor,
/// with hysteresis so that weather drift and sensor noise never count.
public struct FloorCounter: Sendable {
    public let floorHeightMeters: Double
    public private(set) var ascended = 0
    public private(set) var descended = 0
    private var reference: Double?
    private var smoothed: Double?

    public init(floorHeightMeters: Double = 3) { self.floorHeightMeters = floorHeightMeters }

    /// Height above the 1013.25 hPa level from the international barometric formula (ICAO standard atmosphere).
    public static func altitudeMeters(pressureKilopascal: Double) -> Double {
        44330.77 * (1 - pow(pressureKilopascal / 101.325, 0.190263))
    }

    public mutating func reset() {
        ascended = 0
        descended = 0
        reference = smoothed
    }

    /// Feeds one pressure reading (kPa, as IIO reports `in_pressure`).
    public mutating func update(pressureKilopascal: Double) {
        guard pressureKilopascal > 10, pressureKilopascal < 120 else { return }
        let altitude = Self.altitudeMeters(pressureKilopascal: pressureKilopascal)
        // A few seconds of smoothing: pressure sensors are noisy to ~0.1 m per reading.
        let value = smoothed.map { $0 + (altitude - $0) * 0.2 } ?? altitude
        smoothed = value
        guard let base = reference else { reference = value; return }
        // A floor counts once the height has moved a whole floor from where the last floor was counted.
        if value - base >= floorHeightMeters {
            let floors = Int((value - base) / floorHeightMeters)
            ascended += floors
            reference = base + Double(floors) * floorHeightMeters
        } else if base - value >= floorHeightMeters {
            let floors = Int((base - value) / floorHeightMeters)
            descended += floors
            reference = base - Double(floors) * floorHeightMeters
        }
    }
}
