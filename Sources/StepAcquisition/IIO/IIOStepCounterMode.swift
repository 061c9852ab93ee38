import Foundation
import Logging
import StepProcessing

/// The sensor-counter mode's I/O (`--sensor-step-counter`, docs/iio.md "The sensor's own step counter"):
/// reads the counter at each refill while capturing and, when StepCounterMode says the counter may count,
/// lets capture stop (the buffer is destroyed, the sensor keeps counting by itself) and reads the counter
/// at its slow pace until capture must come back. Runs on the source's thread.
final class IIOStepCounterMode {
    let counter: IIOStepCounter
    private var mode: StepCounterMode
    private let logger: Logger
    private let name: String
    /// Capture goes on this long after the switch, so that the detector reports its steps up to the switch
    /// (a step inside a bout is reported at most 0.86 s late, docs/step-detection.md "Delay").
    static let drainSeconds = 1.5
    private var stopCaptureAt: Double?

    init(counter: IIOStepCounter, name: String, settings: StepCounterMode.Settings = .init(), logger: Logger) {
        self.counter = counter
        self.mode = StepCounterMode(settings: settings)
        self.name = name
        self.logger = logger
    }

    /// At each refill while capturing: true once capture should stop.
    func afterRefill(sink: SampleSink, now: Double) -> Bool {
        if let stopCaptureAt { return now >= stopCaptureAt }
        guard let value = counter.read() else { return false }
        guard mode.captured(at: now, counter: value, demand: sink.captureDemand()) == .countWithSensor else { return false }
        logger.info("\(name): the sensor's step counter counts now (\(mode.reason)); capture stops")
        sink.stepCounterRead(value, at: now, countingAfter: .sensor)
        stopCaptureAt = now + Self.drainSeconds
        return false
    }

    /// With capture off: reads the counter at the mode's pace until capture must come back (returns) or
    /// the source stops. A counter that cannot be read brings capture back, which says why if the device went.
    /// The barometer is read in these wake-ups as in the refills (IIOReadAlong), at the counter's pace, rather
    /// than on its own thread at 4 Hz.
    func countWithSensor(sink: SampleSink, stop: SourceThread, readAlong: IIOReadAlong?) {
        stopCaptureAt = nil
        defer { readAlong?.stopped() }
        while !stop.wait(seconds: mode.readInterval) {
            let now = IIOTimeline.monotonicSeconds()
            // Before the counter's steps, so that the reading waits in the engine's inbox for them.
            readAlong?.refilled(paceHz: 1 / mode.readInterval, now: now)
            guard let value = counter.read() else {
                logger.warning("\(name): cannot read the step counter: capture comes back")
                sink.stepCounterRead(-1, at: now, countingAfter: .detector)
                return
            }
            sink.hardwareStepsChanged(value)
            let action = mode.read(counter: value, motionWatched: sink.captureDemand().motionWatched)
            sink.stepCounterRead(value, at: now, countingAfter: action == .capture ? .detector : .sensor)
            if action == .capture {
                logger.info("\(name): capture comes back (\(mode.reason)); the detector counts")
                return
            }
        }
    }
}
