import Foundation

/// Whether the motion of the last seconds is gait: a walking bout is confirmed only while it is.
///
/// Rhythmic arm work looks like walking to a cycle counter: brushing teeth makes about 105 cycles a minute,
/// combing hair, wiping and pouring make regular strokes at a walking rhythm. What walking has and they lack is
/// where the energy goes. Walking moves the whole body up and down once per step (1.4–2.5 Hz), so wherever the
/// device is carried, a large share of its motion is along gravity, in the walking band, and it shows in the
/// magnitude |a| that the detector counts. A hand at work moves mostly across gravity (brushing teeth: 3–5 Hz
/// sideways, the forearm still) or turns the device while it moves (combing: the wrist rolls with each stroke),
/// so little of its motion is a vertical bounce. The gate measures, over the last seconds:
///
/// - the vertical share of all motion: the energy of the band-passed magnitude (the vertical bounce) against the
///   energy of the high-passed acceleration vector (all motion above 0.8 Hz, every direction);
/// - the vertical share of the walking band: the same numerator against the band-passed vector's energy, which
///   must be larger the faster the device turns (the gravity direction's rate of change, rad/s): a device that
///   rotates moves gravity between its axes, which puts energy in the vector's band without any bounce.
///   A device on the leg (a trouser pocket) turns with the thigh, at 0.8–1.8 rad/s, but also takes the heel
///   strike's shock, so the turning rate is discounted by the shock content of the magnitude (its energy above
///   4 Hz against the band's, r): rate / (1 + relief × r³). The cube makes the discount a soft threshold: a leg
///   in a pocket gives r = 1.2–2.4 and is excused its turning, a hand combing hair (r about 0.3, turning as fast)
///   is not.
///
/// The gate is open while both hold (the first alone for a device that cannot be in a working hand:
/// `Configuration(placement:)`); `openSince` is when it opened, ignoring closures shorter than
/// `dropoutSeconds` (a single jolt). `WalkingBout` confirms a bout only when the gate has been open since the
/// third of the cycles that confirm it (about two seconds), so a gesture that merely starts like a step (the
/// arm lifting to the head before combing) does not open a bout. Inside a bout a cycle is not judged by the gate:
/// a walk continues through a turn, a stairway or a bag's swing (bout continuity); but once the gate has been
/// closed for `boutEndSeconds` the bout ends, as the motion is no longer walking.
///
/// Causal, fixed memory: seven biquads, nine one-pole averages, two square roots and a division per sample.
public struct WalkingGate: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The vertical bounce must be at least this share of all motion above 0.8 Hz. Walking: 0.09 or more
        /// (a back pocket, whose jolts fill the high band) to 0.6 (an armband); brushing teeth 0.01–0.05.
        public var minimumVerticalShare = 0.07
        /// The vertical share of the walking band must be at least `base + perTurn × turn rate (rad/s)`.
        /// A phone in the hand or at the wrist turns at 0.3–1 rad/s while walking, with 0.4–0.8 of the band's
        /// energy vertical; combing hair turns the wrist at 1–2.5 rad/s with 0.1–0.4 vertical.
        public var minimumBandShare = 0.2
        public var bandSharePerTurnRate = 0.2
        /// How much a heel strike's shock discounts the turn rate: rate / (1 + relief × shock ratio³).
        public var shockRelief = 2.0
        /// Averaging times, seconds: of the energies of the first test and the shock ratio; of the second test's
        /// energies (longer: a stroke of the hand is brief, a walk is not); of the turn rate.
        public var energySeconds = 2.0
        public var bandShareSeconds = 4.0
        public var turnRateSeconds = 2.0
        /// The gravity direction's low-pass time constant, seconds (a quarter second follows the arm's swing).
        public var gravitySeconds = 0.25
        /// Above this the magnitude carries heel-strike shocks, not the body's bounce.
        public var shockCutoffHz = 4.0
        /// Closures shorter than this do not restart `openSince`.
        public var dropoutSeconds = 0.5
        /// A bout ends, without a closing step, once the gate has been closed this long: the walk has turned into
        /// something else without a pause (walking into the bathroom and brushing teeth at once).
        public var boutEndSeconds = 4.0
        /// Whether the second test (the walking band's vertical share against the device's turning) applies. It
        /// tells a hand at work from a walk; it is also what closes the gate on a phone that turns with the thigh
        /// without a heel strike's shock to excuse it (a soft sole, a phone upside down in a loose pocket).
        public var judgesTurning = true

        public init() {}

        /// The gate for a device carried there: one that cannot be in a working hand (a pocket, a bag, the waist)
        /// is judged on the vertical share of its motion alone.
        public init(placement: Placement) {
            self.init()
            judgesTurning = placement.mayBeInAWorkingHand
        }
    }

    public let configuration: Configuration
    /// Whether the motion is gait now.
    public private(set) var isOpen = false
    /// Since when the gate has been open (closures shorter than `dropoutSeconds` ignored); +infinity while closed.
    public private(set) var openSince = Double.infinity
    /// Since when the gate has been closed; +infinity while it is open.
    public private(set) var closedAt = Double.infinity

    private var highX: Biquad, highY: Biquad, highZ: Biquad
    private var bandX: Biquad, bandY: Biquad, bandZ: Biquad
    private var shock: Biquad
    private var gravity = Vector3.zero
    private var lastDirection = Vector3.zero
    private var motionEnergy = 0.0, verticalEnergy = 0.0, shockEnergy = 0.0
    private var bandEnergySlow = 0.0, verticalEnergySlow = 0.0, turnRate = 0.0
    private let energyRate: Double, slowRate: Double, turnRateRate: Double, gravityRate: Double
    private let sampleRateHz: Double

    public init(configuration: Configuration = .init(), sampleRateHz: Double) {
        self.configuration = configuration
        self.sampleRateHz = sampleRateHz
        let c = configuration
        highX = .highPass(cutoffHz: 0.8, sampleRateHz: sampleRateHz)
        highY = highX; highZ = highX
        bandX = .lowPass(cutoffHz: 2.5, sampleRateHz: sampleRateHz)
        bandY = bandX; bandZ = bandX
        shock = .highPass(cutoffHz: c.shockCutoffHz, sampleRateHz: sampleRateHz)
        energyRate = 1 / (sampleRateHz * c.energySeconds)
        slowRate = 1 / (sampleRateHz * c.bandShareSeconds)
        turnRateRate = 1 / (sampleRateHz * c.turnRateSeconds)
        gravityRate = 1 / (sampleRateHz * c.gravitySeconds)
    }

    /// Starts over at this sample, as after a gap: the filters settle on it and the averages are empty.
    public mutating func settle(at acceleration: Vector3, magnitude: Double) {
        highX.settle(at: acceleration.x); highY.settle(at: acceleration.y); highZ.settle(at: acceleration.z)
        bandX.settle(at: 0); bandY.settle(at: 0); bandZ.settle(at: 0)
        shock.settle(at: magnitude)
        gravity = acceleration
        lastDirection = magnitude > 0 ? acceleration * (1 / magnitude) : .zero
        motionEnergy = 0; verticalEnergy = 0; shockEnergy = 0
        bandEnergySlow = 0; verticalEnergySlow = 0; turnRate = 0
        isOpen = false
        openSince = .infinity
        closedAt = .infinity
    }

    /// Takes one sample of the uniform grid: its acceleration, |a|, and |a| band-passed to the walking band (the
    /// detector's own signal).
    @inlinable
    public mutating func process(_ acceleration: Vector3, magnitude: Double, band: Double, time: Double) {
        processImplementation(acceleration, magnitude: magnitude, band: band, time: time)
    }

    @usableFromInline
    mutating func processImplementation(_ a: Vector3, magnitude: Double, band: Double, time: Double) {
        let c = configuration
        let hx = highX.apply(a.x), hy = highY.apply(a.y), hz = highZ.apply(a.z)
        let bx = bandX.apply(hx), by = bandY.apply(hy), bz = bandZ.apply(hz)
        let s = shock.apply(magnitude)
        let vertical = band * band
        motionEnergy += (hx * hx + hy * hy + hz * hz - motionEnergy) * energyRate
        verticalEnergy += (vertical - verticalEnergy) * energyRate
        shockEnergy += (s * s - shockEnergy) * energyRate
        bandEnergySlow += (bx * bx + by * by + bz * bz - bandEnergySlow) * slowRate
        verticalEnergySlow += (vertical - verticalEnergySlow) * slowRate
        gravity = gravity + (a - gravity) * gravityRate
        let length = gravity.magnitude
        let direction = length > 0 ? gravity * (1 / length) : Vector3.zero
        turnRate += ((direction - lastDirection).magnitude * sampleRateHz - turnRate) * turnRateRate
        lastDirection = direction
        // The band-share test, vertical ≥ (base + perTurn × turnRate / (1 + relief × (shock / vertical)³)) × band,
        // multiplied through by the positive (vertical³ + relief × shock³): the same test without a division.
        let bounce = verticalEnergy + 1e-9
        let bounceCubed = bounce * bounce * bounce
        let discounted = bounceCubed + c.shockRelief * shockEnergy * shockEnergy * shockEnergy
        let open = verticalEnergy >= c.minimumVerticalShare * motionEnergy
            && (!c.judgesTurning || verticalEnergySlow * discounted
                >= (c.minimumBandShare * discounted + c.bandSharePerTurnRate * turnRate * bounceCubed) * bandEnergySlow)
        isOpen = open
        if open {
            closedAt = .infinity
            if openSince == .infinity { openSince = time }
        } else {
            if closedAt == .infinity { closedAt = time }
            if time - closedAt > c.dropoutSeconds { openSince = .infinity }
        }
    }
}
