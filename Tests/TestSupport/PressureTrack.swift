import Foundation
import StepProcessing

/// A barometer's readings synthesised from physics, for tests of floor counting: a height profile turned
/// into pressure by the international barometric formula (ICAO standard atmosphere), plus the weather's
/// drift, the sensor's noise and spikes such as a door slam. Deterministic (SplitMix).
public struct PressureTrack: Sendable {
    /// One stretch of the profile: how long, how much height it gains (m, negative down), and whether the
    /// person walks through it (stairs, a corridor) or stands (an elevator, a wait).
    public struct Segment: Sendable {
        public var seconds: Double
        public var climb: Double
        public var walking: Bool
        public init(seconds: Double, climb: Double = 0, walking: Bool) {
            self.seconds = seconds
            self.climb = climb
            self.walking = walking
        }

        /// Stairs: `floors` of `floorHeight` at `rate` m/s vertical (up for positive floors).
        public static func stairs(floors: Int, floorHeight: Double = 3.0, rate: Double) -> Segment {
            let climb = Double(floors) * floorHeight
            return Segment(seconds: abs(climb) / rate, climb: climb, walking: true)
        }

        /// An elevator: the height at `rate` m/s, standing.
        public static func elevator(floors: Int, floorHeight: Double = 3.0, rate: Double = 1.0) -> Segment {
            let climb = Double(floors) * floorHeight
            return Segment(seconds: abs(climb) / rate, climb: climb, walking: false)
        }
    }

    /// A short pressure step that returns (a door slam, a gust): `pascal` higher from `start` for `seconds`.
    public struct Spike: Sendable {
        public var start: Double
        public var seconds: Double
        public var pascal: Double
        public init(start: Double, seconds: Double, pascal: Double) {
            self.start = start
            self.seconds = seconds
            self.pascal = pascal
        }
    }

    /// BMP280 datasheet (BST-BMP280-DS001), table 7: RMS noise 26.4 cm in its noisiest setting (ultra low
    /// power, no IIR filter), about 3.1 Pa near sea level (12 Pa ≈ 1 m).
    public static let bmp280NoisePascal = 3.1
    /// The weather changes pressure by up to about 1 hPa an hour outside storms.
    public static let weatherDriftPascalPerSecond = 100.0 / 3600

    public var segments: [Segment]
    public var spikes: [Spike] = []
    public var startAltitude = 120.0
    public var noisePascal = bmp280NoisePascal
    public var driftPascalPerSecond = -weatherDriftPascalPerSecond
    public var seed: UInt64 = 1

    public init(segments: [Segment]) { self.segments = segments }

    public var duration: Double { segments.reduce(0) { $0 + $1.seconds } }

    /// The height (m) and whether the person walks at `t` seconds from the start.
    public func profile(at t: Double) -> (height: Double, walking: Bool) {
        var start = 0.0, height = startAltitude
        for segment in segments {
            if t < start + segment.seconds {
                return (height + segment.climb * (t - start) / segment.seconds, segment.walking)
            }
            start += segment.seconds
            height += segment.climb
        }
        return (height, segments.last?.walking ?? false)
    }

    /// Pressure at `altitude` m in the standard atmosphere (kPa).
    public static func pressureKilopascal(altitude: Double) -> Double {
        101.325 * pow(1 - altitude / 44330.77, 1 / 0.190263)
    }

    /// Readings at `rateHz` from 0 to the end: (seconds, kPa).
    public func readings(rateHz: Double) -> [(time: Double, kilopascal: Double)] {
        var generator = SplitMix(seed: seed)
        let count = Int(duration * rateHz)
        return (0...count).map { i in
            let t = Double(i) / rateHz
            var pascal = Self.pressureKilopascal(altitude: profile(at: t).height) * 1000
            pascal += driftPascalPerSecond * t + noisePascal * generator.gaussian()
            for spike in spikes where t >= spike.start && t < spike.start + spike.seconds { pascal += spike.pascal }
            return (t, pascal / 1000)
        }
    }

    /// Step times while walking, at `cadenceHz`.
    public func stepTimes(cadenceHz: Double = 1.8) -> [Double] {
        stride(from: 0.25, to: duration, by: 1 / cadenceHz).filter { profile(at: $0).walking }
    }

    /// The `t,p_kpa` CSV the replay reads beside a recording, with `offset` added to the times.
    public func csv(rateHz: Double, offset: Double = 0) -> String {
        "t,p_kpa\n" + readings(rateHz: rateHz).map { String(format: "%.3f,%.5f", $0.time + offset, $0.kilopascal) }
            .joined(separator: "\n") + "\n"
    }
}
