/// One oscillation of the band-passed acceleration magnitude that may be a footfall.
public struct GaitCycle: Equatable, Sendable {
    /// When the cycle is stamped: midway between its rise through the hysteresis level and its crest, seconds.
    public var time: Double
    /// Trough-to-crest height, m/s^2.
    public var amplitude: Double
}

/// Finds oscillations in a band-passed signal with a hysteresis that follows the signal's own size.
///
/// A cycle is a rise of more than `h` above the running trough followed by a fall of more than `h` below
/// the crest, with `h = max(floor, fraction × envelope)`. The envelope jumps up to a large cycle at once and
/// sinks slowly, so the small wobbles that ride on a footfall (heel strike, toe-off, a swinging phone's
/// bounce) do not count as cycles of their own while a faint, steady gait still does.
///
/// The stamp is the midpoint of the rise and the crest: on the band-passed signal the crest of an arm's or a
/// bag's motion wanders within a step, while the rising edge is sharp; their midpoint is the steadier instant
/// (it matched ground truth best on both the phone and the wrist recordings).
public struct GaitCycleFinder: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Smallest hysteresis, m/s^2: below this a wiggle is sensor noise or a hand's tremor, not a footfall.
        public var floorMetersPerSecond2: Double = 0.6
        /// Hysteresis as a fraction of the envelope of recent cycles.
        public var envelopeFraction: Double = 0.25
        /// How far a smaller cycle pulls the envelope down (per cycle).
        public var envelopeFollowRate: Double = 0.1
        /// Time constant of the envelope's decay, seconds: after a vigorous stretch, gentle steps count again
        /// within about a second.
        public var envelopeDecaySeconds: Double = 1.0

        public init() {}
    }

    public let configuration: Configuration
    private let envelopeDecayPerSample: Double
    private var rising = false
    private var crest = 0.0, crestTime = 0.0
    private var trough = 0.0, troughBeforeCrest = 0.0
    private var riseTime = 0.0
    /// A running estimate of recent cycle height, m/s^2.
    public private(set) var envelope = 0.0

    public init(configuration: Configuration = .init(), sampleRateHz: Double) {
        self.configuration = configuration
        envelopeDecayPerSample = 1 - 1 / (sampleRateHz * configuration.envelopeDecaySeconds)
    }

    public mutating func reset() {
        rising = false
        crest = 0; crestTime = 0; trough = 0; troughBeforeCrest = 0; riseTime = 0
        envelope = 0
    }

    /// Feeds one band-passed value; returns a cycle when this value completes one.
    @inlinable
    public mutating func process(_ value: Double, time: Double) -> GaitCycle? {
        processImplementation(value, time: time)
    }

    @usableFromInline
    mutating func processImplementation(_ value: Double, time: Double) -> GaitCycle? {
        let hysteresis = max(configuration.floorMetersPerSecond2, configuration.envelopeFraction * envelope)
        var cycle: GaitCycle?
        if rising {
            if value > crest {
                crest = value
                crestTime = time
            } else if value < crest - hysteresis {
                rising = false
                trough = value
                let amplitude = crest - troughBeforeCrest
                if amplitude > envelope {
                    envelope = amplitude
                } else {
                    envelope += (amplitude - envelope) * configuration.envelopeFollowRate
                }
                cycle = GaitCycle(time: 0.5 * (riseTime + crestTime), amplitude: amplitude)
            }
        } else {
            if value < trough {
                trough = value
            } else if value > trough + hysteresis {
                rising = true
                crest = value
                crestTime = time
                riseTime = time
                troughBeforeCrest = trough
            }
        }
        envelope *= envelopeDecayPerSample
        return cycle
    }
}
