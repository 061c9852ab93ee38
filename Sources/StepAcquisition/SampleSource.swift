import StepProcessing

/// What a source is doing, as STATUS reports it.
public enum SourceState: Equatable, Sendable {
    case starting
    case running
    case finished
    case disconnected(reason: String)
    case busy(reason: String)
    case unavailable(reason: String)

    /// The one-word state for STATUS.
    public var name: String {
        switch self {
        case .starting: return "starting"
        case .running: return "running"
        case .finished: return "finished"
        case .disconnected: return "disconnected"
        case .busy: return "busy"
        case .unavailable: return "unavailable"
        }
    }

    public var reason: String? {
        switch self {
        case .disconnected(let r), .busy(let r), .unavailable(let r): return r
        default: return nil
        }
    }
}

/// Receives what a source produces. Called from the source's own thread; the receiver hops to its queue.
public protocol SampleSink: AnyObject, Sendable {
    func receive(_ samples: [Sample])
    func sourceStateChanged(_ state: SourceState)
}

/// An accelerometer source: a replayed recording, a buffered IIO device, a polled IIO device.
/// A source runs on a thread of its own (blocking reads never touch the processing queue) until stopped.
public protocol SampleSource: AnyObject {
    /// A short description for STATUS, e.g. "replay:walk.csv.gz" or "iio:device0 (lis3dh)".
    var description: String { get }
    /// The kind for STATUS: "replay", "iio-buffer", "iio-poll".
    var kind: String { get }
    func start(sink: SampleSink)
    func stop()
}
