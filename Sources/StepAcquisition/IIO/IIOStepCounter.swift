import CIIO
import StepProcessing

/// The sensor's own pedometer through the kernel's step ABI (sysfs-bus-iio: in_steps_en, in_steps_input),
/// as bma400 and bmi323 expose it. Read at most once a second on the acquisition thread, reported on change.
final class IIOStepCounter {
    private let device: IIODevice
    private let channel: OpaquePointer
    private var lastPoll = -Double.infinity
    private var lastValue: Int?
    static let pollSeconds = 1.0

    init?(device: IIODevice) {
        guard let channel = IIODiscovery.stepCounter(of: device) else { return nil }
        self.device = device
        self.channel = channel
    }

    /// Switches the counter on; a driver that counts always has no `en`.
    func enable() {
        if device.channelHasAttribute(channel, "en") {
            try? device.writeAttribute("en", of: channel, "1")
        }
    }

    /// The counter's value now; nil when it cannot be read.
    func read() -> Int? {
        (try? device.readAttribute("input", of: channel)).flatMap { Int($0) }
    }

    func poll(sink: SampleSink, now: Double) {
        guard now - lastPoll >= Self.pollSeconds else { return }
        lastPoll = now
        guard let text = try? device.readAttribute("input", of: channel), let value = Int(text) else { return }
        guard value != lastValue else { return }
        lastValue = value
        sink.hardwareStepsChanged(value)
    }
}
