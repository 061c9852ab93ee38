/// Receives what a barometer produces: a live IIO pressure sensor (IIOBarometerSource) or the pressure file
/// beside a replayed recording (ReplaySource). Called from the source's own thread.
public protocol BarometerSink: AnyObject, Sendable {
    func receive(pressure: PressureReading)
    func barometerStateChanged(_ state: SourceState)
    /// The barometer found: its kind (`iio`, `replay`), description and polling rate, for STATUS.
    func barometerIdentified(kind: String, description: String, rateHz: Double?)
}
