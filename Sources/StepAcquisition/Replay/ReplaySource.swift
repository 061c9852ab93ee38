import Foundation
import StepProcessing

/// Plays a recording into the pipeline at real time (or `speed` times faster), as if it came from a sensor.
/// With `loop`, the recording starts again with its clock carried on, so the count keeps growing.
public final class ReplaySource: SampleSource, @unchecked Sendable {
    public let path: String
    public let speed: Double
    public let loop: Bool
    public var description: String { "replay:\(path)" }
    public let kind = "replay"

    private let samples: [Sample]
    private let stopped = NSCondition()
    private var stopRequested = false
    private var thread: Thread?

    /// How many samples a batch carries in real time: about 20 wake-ups a second.
    private static let batchSeconds = 0.05

    public init(path: String, speed: Double = 1, loop: Bool = false) throws {
        precondition(speed > 0, "speed must be positive")
        self.path = path
        self.speed = speed
        self.loop = loop
        samples = try RecordingReader.read(path: path)
    }

    public func start(sink: SampleSink) {
        let thread = Thread { [self] in run(sink: sink) }
        thread.name = "stepd.replay"
        self.thread = thread
        thread.start()
    }

    public func stop() {
        stopped.lock()
        stopRequested = true
        stopped.broadcast()
        stopped.unlock()
    }

    /// Sleeps until `deadline` or a stop; true if it was stopped.
    private func wait(until deadline: Date) -> Bool {
        stopped.lock()
        defer { stopped.unlock() }
        while !stopRequested {
            if !stopped.wait(until: deadline) { break }
        }
        return stopRequested
    }

    private func run(sink: SampleSink) {
        sink.sourceStateChanged(.running)
        let first = samples[0].time
        let duration = samples[samples.count - 1].time - first
        // Each pass continues the clock one median interval after the last sample.
        let gap = duration / Double(max(samples.count - 1, 1))
        let wallStart = Date()
        var clockOffset = 0.0
        repeat {
            var index = 0
            while index < samples.count {
                let batchEnd = samples[index].time - first + clockOffset + Self.batchSeconds * speed
                var batch: [Sample] = []
                while index < samples.count, samples[index].time - first + clockOffset < batchEnd {
                    var s = samples[index]
                    s.time += clockOffset
                    batch.append(s)
                    index += 1
                }
                let due = wallStart.addingTimeInterval((batch[batch.count - 1].time - first) / speed)
                if wait(until: due) { return }
                sink.receive(batch)
            }
            clockOffset += duration + gap
        } while loop
        sink.sourceStateChanged(.finished)
    }
}
