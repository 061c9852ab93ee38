/// What a source is doing, as STATUS reports it.
public enum SourceState: Equatable, Sendable {
    case starting
    case running
    case finished
    /// No accelerometer yet: the source waits for one to appear (a driver loading, a USB sensor plugged in).
    case waiting(reason: String)
    case disconnected(reason: String)
    case busy(reason: String)
    case unavailable(reason: String)

    /// The one-word state for STATUS.
    public var name: String {
        switch self {
        case .starting: return "starting"
        case .running: return "running"
        case .finished: return "finished"
        case .waiting: return "waiting"
        case .disconnected: return "disconnected"
        case .busy: return "busy"
        case .unavailable: return "unavailable"
        }
    }

    public var reason: String? {
        switch self {
        case .waiting(let r), .disconnected(let r), .busy(let r), .unavailable(let r): return r
        default: return nil
        }
    }
}

/// Receives what a source produces. Called from the source's own thread; the receiver hops to its queue.
public protocol SampleSink: AnyObject, Sendable {
    func receive(_ samples: [Sample])
    func sourceStateChanged(_ state: SourceState)
    /// Readings the source itself dropped as glitches (an IIO chip's rail, an all-zero transfer).
    func samplesRejected(_ count: Int)
    /// Samples the device took that never reached the source (an IIO buffer that overran while its reader was
    /// held up: SampleGapCounter), the last of them between `from` and `to` on the samples' clock.
    func samplesLost(_ count: Int, from: Double, to: Double)
    /// The source found its device: the kind and description STATUS shows change (a sensor that appeared).
    func sourceIdentified(kind: String, description: String)
    /// The sensor's own step counter (the kernel's `in_steps_input`: bma400, bmi323...), on change; sources
    /// without one never call it.
    func hardwareStepsChanged(_ steps: Int)
    /// The sensor-counter mode (StepCounterMode): a read of the counter at `time` (the samples' clock), and
    /// who counts the steps after it. Sources without the mode never call it.
    func stepCounterRead(_ steps: Int, at time: Double, countingAfter counting: StepCounting)
    /// The sensor-counter mode was asked for: whether the device has a counter for it (STATUS says so); nil
    /// while no device has been read yet.
    func sensorStepCounterAvailable(_ available: Bool?)
    /// What the sensor-counter mode needs from the daemon to decide (a MOTION watcher, the steps so far).
    func captureDemand() -> CaptureDemand
}

extension SampleSink {
    public func samplesRejected(_ count: Int) {}
    public func samplesLost(_ count: Int, from: Double, to: Double) {}
    public func sourceIdentified(kind: String, description: String) {}
    public func hardwareStepsChanged(_ steps: Int) {}
    public func stepCounterRead(_ steps: Int, at time: Double, countingAfter counting: StepCounting) {}
    public func sensorStepCounterAvailable(_ available: Bool?) {}
    public func captureDemand() -> CaptureDemand { CaptureDemand(motionWatched: true, steps: 0) }
}

/// An accelerometer source: a replayed recording, a buffered IIO device, a polled IIO device.
/// A source runs on a thread of its own (blocking reads never touch the processing queue) until stopped.
public protocol SampleSource: AnyObject {
    /// A short description for STATUS, e.g. "replay:walk.csv.gz" or "iio:device0 (lis3dh)".
    var description: String { get }
    /// The kind for STATUS: "replay", "demo", "iio-buffer", "iio-poll", "iio" (none found yet).
    var kind: String { get }
    /// True for the bundled demo recording: its steps are not the user's.
    var isDemo: Bool { get }
    func start(sink: SampleSink)
    func stop()
}

extension SampleSource {
    public var isDemo: Bool { false }
}
