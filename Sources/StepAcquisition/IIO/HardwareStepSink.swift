/// A sink that also takes the sensor's own step counter (the kernel's `in_steps_input`, bma400, bmi323...).
/// Sources hand it over from their thread, as with samples; the receiver hops to its queue.
public protocol HardwareStepSink: SampleSink {
    func hardwareStepsChanged(_ steps: Int)
}
