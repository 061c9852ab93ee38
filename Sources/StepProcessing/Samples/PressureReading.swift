/// One barometer reading: seconds on the source's steady clock (a recording's, or the monotonic clock for a
/// live sensor) and the pressure in kPa, the unit of IIO's `in_pressure_input`.
public struct PressureReading: Sendable, Equatable {
    public var time: Double
    public var kilopascal: Double

    public init(time: Double, kilopascal: Double) {
        self.time = time
        self.kilopascal = kilopascal
    }
}
