import Foundation
import Locking
import Logging
import StepProcessing

/// An IIO accelerometer as a sample source: finds the device (by `selector`, else the first), reads it
/// buffered when it can and polled when it cannot. Waiting for a device, the states and the retries are the
/// shared loop's (IIOSensorLoop): this type is the accelerometer's reader and what STATUS says of it.
public final class IIOAccelerometerSource: SampleSource, Sendable {
    public let uri: String
    public let selector: String?
    public let pipelineRateHz: Double
    /// `--sensor-step-counter`: let the accelerometer's own step counter count while still or walking
    /// steadily, capture off (IIOStepCounterMode).
    public let sensorStepCounter: Bool

    /// What STATUS names: changes on the source's thread when a device is found, read from any thread.
    private struct Identity {
        var description: String
        var kind: String
    }
    private let identity: Locked<Identity>
    public var description: String { identity.withLock { $0.description } }
    public var kind: String { identity.withLock { $0.kind } }

    private let logger: Logger
    private let thread = SourceThread(name: "stepd.iio")

    /// Looks for the device now, so `kind` and `description` name it; a missing device is not an error here.
    public init(uri: String = "local:", selector: String? = nil, pipelineRateHz: Double = 60,
                sensorStepCounter: Bool = false, logger: Logger = Logger(label: "stepd.iio")) {
        self.uri = uri
        self.sensorStepCounter = sensorStepCounter
        self.selector = selector
        self.pipelineRateHz = pipelineRateHz
        self.logger = logger
        if let (_, found) = try? IIODiscovery.find(uri: uri, selector: selector) {
            identity = Locked(Identity(description: found.displayName, kind: found.buffered ? "iio-buffer" : "iio-poll"))
        } else {
            identity = Locked(Identity(description: selector.map { "iio \($0)" } ?? "iio accelerometer", kind: "iio"))
        }
    }

    /// Whether an accelerometer was found when the source was made.
    public var foundDevice: Bool { kind != "iio" }

    public func start(sink: SampleSink) {
        if sensorStepCounter { sink.sensorStepCounterAvailable(nil) }
        thread.start { [self] in
            IIOSensorLoop(rule: IIODiscovery.Rule(), uri: uri, selector: selector, thread: thread, logger: logger)
                .run(report: sink.sourceStateChanged) { device, found in try read(device, found, sink: sink) }
        }
    }

    /// Returns once the reading thread has ended, or after SourceThread's time-out with a warning.
    public func stop() { thread.stop(logger: logger, "iio accelerometer") }

    /// Reads the accelerometer found until the source stops (returns) or a fault (throws).
    private func read(_ device: IIODevice, _ found: AccelerometerDescription, sink: SampleSink) throws {
        identify(found, sink: sink)
        let counter = IIOStepCounter(device: device)
        if found.buffered {
            let mode = counterMode(counter, found, sink: sink)
            let buffered = IIOBufferedSource(device: device, pipelineRateHz: pipelineRateHz, logger: logger)
            repeat {
                try buffered.run(sink: sink, stop: thread, hardwareSteps: counter, counterMode: mode)
                mode?.countWithSensor(sink: sink, stop: thread, readAlong: buffered.readAlong)
            } while mode != nil && !thread.isStopped
        } else {
            if sensorStepCounter {
                logger.notice("\(found.displayName): polled, not buffered: the sensor step counter mode needs a buffer; the detector counts")
                sink.sensorStepCounterAvailable(false)
            }
            try IIOPolledSource(device: device, rateHz: pipelineRateHz, logger: logger)
                .run(sink: sink, stop: thread, hardwareSteps: counter)
        }
    }

    /// The sensor-counter mode when it is asked for and the device has a counter; says so when it has none.
    private func counterMode(_ counter: IIOStepCounter?, _ found: AccelerometerDescription,
                             sink: SampleSink) -> IIOStepCounterMode? {
        guard sensorStepCounter else { return nil }
        guard let counter else {
            logger.notice("\(found.displayName) has no step counter (in_steps_input): the detector counts, capture stays on")
            sink.sensorStepCounterAvailable(false)
            return nil
        }
        counter.enable()
        sink.sensorStepCounterAvailable(true)
        // The detector counts while capture runs; a ledger left counting by a device that went away mid-switch
        // takes the counter's steps up to now.
        if let value = counter.read() {
            sink.stepCounterRead(value, at: IIOTimeline.monotonicSeconds(), countingAfter: .detector)
        }
        return IIOStepCounterMode(counter: counter, name: found.displayName, logger: logger)
    }

    private func identify(_ found: AccelerometerDescription, sink: SampleSink) {
        let now = Identity(description: found.displayName, kind: found.buffered ? "iio-buffer" : "iio-poll")
        let changed: Bool = identity.withLock { current in
            defer { current = now }
            return current.kind != now.kind || current.description != now.description
        }
        if changed { sink.sourceIdentified(kind: now.kind, description: now.description) }
    }
}
