import Foundation
import Logging
import StepProcessing
import Timekeeping

/// Plays a recording into the pipeline at real time (or `speed` times faster), as if it came from a sensor.
/// With `loop`, the recording starts again with its clock carried on, so the count keeps growing. A demo
/// (`--demo`) is the same replay, marked so that STATUS and the daemon treat it as one.
///
/// Sendable by construction: everything here is immutable; what a replay advances (its place in the samples and
/// in the pressure file) lives on the playing thread's stack (`run`).
public final class ReplaySource: SampleSource, Sendable {
    public let path: String
    public let speed: Double
    public let loop: Bool
    public let isDemo: Bool
    public var description: String { "\(isDemo ? "demo" : "replay"):\(path)" }
    public var kind: String { isDemo ? "demo" : "replay" }

    private let samples: [Sample]
    /// The barometer's file beside the recording (PressureFile.swift), when there is one, as read: each
    /// playing thread advances a copy of its own.
    private let pressure: PressureFeed?
    public var pressurePath: String? { pressure?.path }
    private let logger: Logger
    private let thread: SourceThread

    /// How many samples a batch carries in real time: about 20 wake-ups a second.
    private static let batchSeconds = 0.05
    /// The least wall time between two batches. A gap is due at once (ReplayClock), so a recording of gaps only
    /// (samples an hour apart), looped, would hand the engine batches as fast as the thread can make them:
    /// they queue on the pipeline without bound (300 MB in 15 s). Batches of real data come every
    /// `batchSeconds`, so this never delays them; it holds a stream of gaps to 40 batches a second.
    private static let leastBatchSpacingSeconds = batchSeconds / 2

    /// `pressure`: replay the barometer's file beside the recording when there is one (docs/barometer.md).
    public init(path: String, speed: Double = 1, loop: Bool = false, demo: Bool = false, units: RecordingUnits = .auto,
                pressure readsPressure: Bool = true,
                logger: Logger = Logger(label: "stepd.replay"), clock: any DaemonClock = SystemClock()) throws {
        precondition(speed > 0 && speed.isFinite, "speed must be a positive number")
        self.path = path
        self.speed = speed
        self.loop = loop
        isDemo = demo
        self.logger = logger
        thread = SourceThread(name: "stepd.replay", clock: clock)
        let read = try RecordingReader.readWithStats(path: path, units: units)
        samples = read.samples
        if let notice = read.stats.unitsNotice { logger.notice("replay \(notice)") }
        pressure = readsPressure ? try PressureFile.find(besideRecording: path).map(PressureFeed.init) : nil
    }

    public func start(sink: SampleSink) { start(sink: sink, barometer: nil) }

    /// Plays the recording into `sink` and its pressure file, when there is one, into `barometer`.
    public func start(sink: SampleSink, barometer: BarometerSink?) {
        thread.start { [self] in run(sink: sink, barometer: barometer) }
    }

    /// Returns once the playing thread has ended, or after SourceThread's time-out with a warning.
    public func stop() { thread.stop(logger: logger, "replay \(path)") }

    /// Sleeps until `deadline` (the thread's clock's monotonic seconds) or a stop; true if it was stopped. The
    /// deadline is capped to what ReplayClock can ask for.
    private func wait(until deadline: Double) -> Bool {
        let cap = thread.clock.monotonicSeconds + ReplayClock.defaultMaximumGapSeconds / speed + 1
        return thread.wait(untilMonotonic: min(deadline, cap))
    }

    private func run(sink: SampleSink, barometer: BarometerSink?) {
        var pressure = self.pressure
        sink.sourceStateChanged(.running)
        pressure?.start(barometer)
        var clock = ReplayClock(speed: speed)
        let period = Self.typicalInterval(samples)
        var clockOffset = 0.0
        var reportedGap = false
        var batch: [Sample] = []
        var earliestNextBatch = -Double.infinity
        repeat {
            var index = 0
            var lastTime = -Double.infinity
            while index < samples.count {
                // A batch: the samples due within batchSeconds of the first, at least one.
                batch.removeAll(keepingCapacity: true)
                let now = thread.clock.monotonicSeconds
                var first: Double?
                var due = now
                while index < samples.count {
                    var s = samples[index]
                    // The pipeline and the engine see the played time: a glitch in the recording's clock
                    // neither shifts the rest of the file nor stamps the steps before it a day away.
                    let (wall, played, afterGap) = clock.due(s.time + clockOffset, now: now)
                    s.time = played
                    if afterGap && !reportedGap {
                        reportedGap = true
                        logger.notice("""
                            replay \(path): the recording's clock jumps at sample \(index + 1) \
                            (t = \(samples[index].time)); treated as a gap (a single row out of order: played \
                            with the one before), here and at any later jump
                            """)
                    }
                    if let first, wall - first > Self.batchSeconds { break }
                    if first == nil { first = wall }
                    due = wall
                    batch.append(s)
                    if samples[index].time.isFinite { lastTime = max(lastTime, samples[index].time + clockOffset) }
                    index += 1
                }
                let deliverAt = max(due, earliestNextBatch)
                if wait(until: deliverAt) { return }
                earliestNextBatch = deliverAt + Self.leastBatchSpacingSeconds
                sink.receive(batch)
                // The barometer's file is on the recording's clock: played on the accelerometer's played clock.
                if lastTime.isFinite {
                    pressure?.feed(until: clock.lastPlayed, offset: clockOffset + clock.offsetSeconds, to: barometer)
                }
            }
            // The next pass continues the clock one typical interval after the last sample.
            if lastTime.isFinite { clockOffset = lastTime + period - samples[0].time }
            pressure?.rewind()
        } while loop && samples[0].time.isFinite
        if clock.gaps + clock.glitches > 0 {
            logger.debug("replay \(path): \(clock.gaps) gaps and \(clock.glitches) rows out of order in the recording's clock")
        }
        sink.sourceStateChanged(.finished)
        if pressure != nil { barometer?.barometerStateChanged(.finished) }
    }

    /// The median of the first intervals: what one sample is worth, robust to a jump in the clock.
    static func typicalInterval(_ samples: [Sample]) -> Double {
        var intervals: [Double] = []
        for i in 1..<min(samples.count, 202) {
            let d = samples[i].time - samples[i - 1].time
            if d > 0 && d.isFinite { intervals.append(d) }
        }
        guard !intervals.isEmpty else { return 0.01 }
        return intervals.sorted()[intervals.count / 2]
    }
}
