import Foundation
import Logging
import StepProcessing

/// An IIO accelerometer as a sample source: finds the device (by `selector`, else the first), reads it
/// buffered when it can and polled when it cannot. With no accelerometer it waits for one (state
/// `waiting`): woken by the IIO device watcher when a device appears, not by looking every second. On
/// other faults (busy, unplugged mid-stream) it reports the state and tries again every `retrySeconds`.
///
/// `@unchecked Sendable`: the description and kind change under `identity`, the rest is immutable or the thread's.
public final class IIOAccelerometerSource: SampleSource, @unchecked Sendable {
    public let uri: String
    public let selector: String?
    public let pipelineRateHz: Double
    private let identity: NSLock = NSLock()
    private var currentDescription: String
    private var currentKind: String
    public var description: String { identity.withLock { currentDescription } }
    public var kind: String { identity.withLock { currentKind } }

    /// Wait between attempts while the device is busy or failing.
    public static let retrySeconds = 1.0
    /// How long a device that has just appeared may refuse the daemon (EACCES) before it is a fault: udev applies
    /// 60-stepd.rules (group stepd, mode 0660) a moment after the kernel made the node and woke the daemon;
    /// 1.5-2.7 s were seen when a HID sensor appeared during a systemd boot under QEMU.
    public static let udevGraceSeconds = 10.0

    private let logger: Logger
    private let thread = SourceThread(name: "stepd.iio")

    /// Looks for the device now, so `kind` and `description` name it; a missing device is not an error here.
    public init(uri: String = "local:", selector: String? = nil, pipelineRateHz: Double = 60,
                logger: Logger = Logger(label: "stepd.iio")) {
        self.uri = uri
        self.selector = selector
        self.pipelineRateHz = pipelineRateHz
        self.logger = logger
        if let (_, found) = try? IIODiscovery.find(uri: uri, selector: selector) {
            currentDescription = found.displayName
            currentKind = found.buffered ? "iio-buffer" : "iio-poll"
        } else {
            currentDescription = selector.map { "iio \($0)" } ?? "iio accelerometer"
            currentKind = "iio"
        }
    }

    /// Whether an accelerometer was found when the source was made.
    public var foundDevice: Bool { kind != "iio" }

    public func start(sink: SampleSink) {
        thread.start { [self] in run(sink: sink) }
    }

    /// Returns once the reading thread has ended (SourceThread).
    public func stop() { thread.stop() }

    private func run(sink: SampleSink) {
        // A local context can be watched for devices appearing; a remote iiod cannot, so it is asked again.
        let watcher = uri.hasPrefix("local") ? IIODeviceWatcher(logger: logger) : nil
        var lastState: SourceState?
        // When the device was last found after being missing: a refusal soon after is udev not done yet.
        var appearedAt: Date?
        while !thread.isStopped {
            watcher?.drain()
            logger.trace("iio: looking for an accelerometer through \(uri)")
            var missing = false
            do {
                let (device, found) = try IIODiscovery.find(uri: uri, selector: selector)
                identify(found, sink: sink)
                if appearedAt == nil { appearedAt = Date() }
                let counter = IIOStepCounter(device: device)
                if found.buffered {
                    try IIOBufferedSource(device: device, pipelineRateHz: pipelineRateHz, logger: logger)
                        .run(sink: sink, stop: thread, hardwareSteps: counter)
                } else {
                    try IIOPolledSource(device: device, rateHz: pipelineRateHz, logger: logger)
                        .run(sink: sink, stop: thread, hardwareSteps: counter)
                }
                // Ran and stopped: a fault from here on is news, even the same one as last time (a second
                // unplug after a quick replug would otherwise go unreported). The engine drops repeats.
                lastState = nil
            } catch let error as IIOError {
                missing = Self.isMissing(error, uri: uri)
                if missing || error.isDisconnection { appearedAt = nil }
                let state = Self.state(for: error, missing: missing,
                                       sinceAppeared: appearedAt.map { Date().timeIntervalSince($0) })
                // Report a fault once; retries of the same fault stay quiet (the engine logs transitions).
                if state != lastState { sink.sourceStateChanged(state) }
                lastState = state
            } catch {
                sink.sourceStateChanged(.unavailable(reason: "\(error)"))
            }
            if thread.waitBeforeRetry(deviceMissing: missing, watcher: watcher, retrySeconds: Self.retrySeconds) { break }
        }
        sink.sourceStateChanged(.finished)
    }

    private func identify(_ found: AccelerometerDescription, sink: SampleSink) {
        let kind = found.buffered ? "iio-buffer" : "iio-poll"
        let changed: Bool = identity.withLock {
            defer { currentKind = kind; currentDescription = found.displayName }
            return currentKind != kind || currentDescription != found.displayName
        }
        if changed { sink.sourceIdentified(kind: kind, description: found.displayName) }
    }

    /// The state to report for a fault. A device that refuses the daemon within `udevGraceSeconds` of appearing
    /// is `waiting` for udev (a notice in the log), not `unavailable` (a warning): the refusal is expected at
    /// every plug-in and at boot, and only a refusal that lasts is a fault a person must fix.
    static func state(for error: IIOError, missing: Bool, sinceAppeared: TimeInterval?) -> SourceState {
        if case .notPermitted(let device, _, _) = error, let sinceAppeared, sinceAppeared < udevGraceSeconds {
            return .waiting(reason: "\(device) has just appeared and is not readable yet: waiting for udev to give it "
                            + "to group stepd (60-stepd.rules)")
        }
        return error.sourceState(missing: missing)
    }

    /// No accelerometer (yet) on this machine: nothing to retry until a device appears.
    static func isMissing(_ error: IIOError, uri: String) -> Bool {
        switch error {
        case .noAccelerometer, .deviceNotFound: return true
        // A local context with no IIO subsystem yet: the iio module is not loaded until a driver needs it.
        case .contextUnavailable: return uri.hasPrefix("local")
        default: return false
        }
    }

}
