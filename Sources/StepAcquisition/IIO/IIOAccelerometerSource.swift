import Foundation
import StepProcessing

/// An IIO accelerometer as a sample source: finds the device (by `selector`, else the first), reads it
/// buffered when it can and polled when it cannot, and on any fault (no device, busy, unplugged) reports
/// the state and tries again, so the daemon stays up and reattaches when the device comes back.
public final class IIOAccelerometerSource: SampleSource, @unchecked Sendable {
    public let uri: String
    public let selector: String?
    public let pipelineRateHz: Double
    public private(set) var description: String
    public private(set) var kind: String

    /// Wait between attempts while the device is missing or busy.
    public static let retrySeconds = 1.0

    private let stopSignal = IIOStopSignal()
    private var thread: Thread?

    /// Looks for the device now, so `kind` and `description` name it; a missing device is not an error here.
    public init(uri: String = "local:", selector: String? = nil, pipelineRateHz: Double = 60) {
        self.uri = uri
        self.selector = selector
        self.pipelineRateHz = pipelineRateHz
        if let (_, found) = try? IIODiscovery.find(uri: uri, selector: selector) {
            description = found.displayName
            kind = found.buffered ? "iio-buffer" : "iio-poll"
        } else {
            description = selector.map { "iio \($0)" } ?? "iio accelerometer"
            kind = "iio"
        }
    }

    public func start(sink: SampleSink) {
        let thread = Thread { [self] in run(sink: sink) }
        thread.name = "stepd.iio"
        self.thread = thread
        thread.start()
    }

    public func stop() { stopSignal.stop() }

    private func run(sink: SampleSink) {
        var lastError: IIOError?
        while !stopSignal.isStopped {
            do {
                let (device, found) = try IIODiscovery.find(uri: uri, selector: selector)
                // Found again: a fault from here on is news, even the same one as last time (a second
                // unplug after a quick replug would otherwise go unreported). The engine drops repeats.
                lastError = nil
                let counter = IIOStepCounter(device: device)
                if found.buffered {
                    try IIOBufferedSource(device: device, pipelineRateHz: pipelineRateHz)
                        .run(sink: sink, stop: stopSignal, hardwareSteps: counter)
                } else {
                    try IIOPolledSource(device: device, rateHz: pipelineRateHz)
                        .run(sink: sink, stop: stopSignal, hardwareSteps: counter)
                }
                lastError = nil
            } catch let error as IIOError {
                // Report a fault once; retries of the same fault stay quiet (the engine logs transitions).
                if error != lastError { sink.sourceStateChanged(Self.state(for: error)) }
                lastError = error
            } catch {
                sink.sourceStateChanged(.unavailable(reason: "\(error)"))
            }
            if stopSignal.wait(seconds: Self.retrySeconds) { break }
        }
        sink.sourceStateChanged(.finished)
    }

    static func state(for error: IIOError) -> SourceState {
        switch error {
        case .deviceBusy: return .busy(reason: error.description)
        case .disconnected: return .disconnected(reason: error.description)
        default: return .unavailable(reason: error.description)
        }
    }
}
