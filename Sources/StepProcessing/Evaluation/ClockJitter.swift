/// Moves a recording's timestamps by a random amount each, as unevenly as a phone's sensor clock. A phone
/// stamps each reading when the operating system gets it, a few milliseconds off the true sampling instant.
/// `stepd bench --jitter-ms` runs the detectors on the jittered recording, to show how far a score moves when
/// nothing about the walk has changed.
///
/// Each timestamp moves by a uniform amount in ±`seconds`, and never past its neighbour. A row whose time
/// repeats or goes back in the recording keeps that offset from the row before it, so the resampler sees the
/// same faults. The draw depends only on the seed and on the trace's name, so a trace moves the same way
/// whichever other traces are scored with it.
public struct ClockJitter: Sendable {
    public let seconds: Double
    private var generator: SplitMix
    private var lastOriginal = -Double.infinity
    private var lastJittered = -Double.infinity

    public init(milliseconds: Double, seed: UInt64, trace: String) {
        seconds = max(0, milliseconds) / 1000
        // FNV-1a of the name: a stable hash (Swift's Hasher is seeded anew in every process).
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in trace.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        generator = SplitMix(seed: seed ^ hash)
    }

    public mutating func apply(_ samples: inout [Sample]) {
        guard seconds > 0 else { return }
        for index in samples.indices {
            let original = samples[index].time
            var moved: Double
            if original > lastOriginal {
                moved = original + generator.uniform(-seconds, seconds)
                // In order, and no closer to the last row than a tenth of their original spacing.
                if lastOriginal.isFinite { moved = max(moved, lastJittered + (original - lastOriginal) * 0.1) }
            } else {
                // Repeated or behind: the same offset from the row before as in the recording.
                moved = lastJittered + (original - lastOriginal)
            }
            samples[index].time = moved
            lastOriginal = original
            lastJittered = moved
        }
    }
}
