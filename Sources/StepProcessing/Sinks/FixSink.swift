/// Where the link to gpsd stands, as the source sees it.
public enum GPSConnectionState: Equatable, Sendable {
    case connected
    case unavailable(reason: String)
}

/// Receives what the gpsd source produces, from the source's own thread; the receiver hops to its queue.
public protocol FixSink: AnyObject, Sendable {
    func receive(fix: Fix)
    func gpsConnectionChanged(_ state: GPSConnectionState)
}
