/// Acceleration along three axes, in m/s^2 unless a name says otherwise.
public struct Vector3: Equatable, Sendable {
    public var x: Double
    public var y: Double
    public var z: Double

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    public static let zero = Vector3(x: 0, y: 0, z: 0)

    @inlinable public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }

    @inlinable public static func + (a: Vector3, b: Vector3) -> Vector3 { Vector3(x: a.x + b.x, y: a.y + b.y, z: a.z + b.z) }
    @inlinable public static func - (a: Vector3, b: Vector3) -> Vector3 { Vector3(x: a.x - b.x, y: a.y - b.y, z: a.z - b.z) }
    @inlinable public static func * (a: Vector3, k: Double) -> Vector3 { Vector3(x: a.x * k, y: a.y * k, z: a.z * k) }
    @inlinable public func dot(_ b: Vector3) -> Double { x * b.x + y * b.y + z * b.z }
}

/// One accelerometer reading: seconds on the source's own clock, acceleration in m/s^2 with gravity included.
public struct Sample: Equatable, Sendable {
    public var time: Double
    public var acceleration: Vector3

    public init(time: Double, acceleration: Vector3) {
        self.time = time
        self.acceleration = acceleration
    }

    public init(time: Double, x: Double, y: Double, z: Double) {
        self.init(time: time, acceleration: Vector3(x: x, y: y, z: z))
    }
}

/// Standard gravity (CGPM 1901), m/s^2.
public let standardGravity = 9.80665
