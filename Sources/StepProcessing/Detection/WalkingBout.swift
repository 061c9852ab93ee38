/// Decides which gait cycles are steps: only those that belong to a walking bout.
///
/// Handling a phone, typing, setting it on a table or riding a bus makes oscillations too, but not a run of
/// several of them at a walking rhythm with a steady size. Cycles are held back until `confirmationSteps` of
/// them form such a run (or `shortBoutSteps` of them an even, same-sized run: a few steps between pauses);
/// then the bout is confirmed and all of them are counted at once, with their own (earlier) times, as phone
/// pedometers do. Inside a bout each further cycle is counted as soon as it is seen, unless it is too faint or
/// too soon to be a footfall; a smaller cycle on the walk's rhythm still counts (the short, slow steps of a turn);
/// a footfall missed between two seen ones is counted when the second arrives; a cycle that comes after the
/// device has turned from the bout's posture waits for the walk to go on. The push-off just before a
/// confirmed run is counted with it. A pause longer than
/// `maximumStepIntervalSeconds` ends the bout, and counts the closing step that brought the feet together.
///
/// Fixed memory: the held cycles live in arrays of capacity `confirmationSteps`.
public struct WalkingBout: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Cycles in a row that confirm a bout. Six steps (three strides) is about three seconds of walking,
        /// more than a gesture or a bump lasts, and little to hold back.
        public var confirmationSteps = 6
        /// The shortest step interval, seconds: 3.6 steps per second is faster than anyone walks (brisk walking
        /// reaches 2.5) and than all but a hurried stair descent; closer cycles are one step. A hand-held device
        /// also bounces at twice the step rate (4 Hz, 0.25 s apart at 2 steps/s), which 0.25 let through as steps.
        /// Inside a stair descent's quick rhythm the limit is `fastStepMinimumIntervalSeconds`.
        public var minimumStepIntervalSeconds = 0.28
        /// The longest step interval within a bout, seconds (40 steps per minute, the slowest stroll).
        public var maximumStepIntervalSeconds = 1.5
        /// Inside a bout a cycle closer than this fraction of the current step period is a second crest of the
        /// same footfall (a loose or one-sided carrier sees heel strike and push-off apart). Even at gait
        /// initiation, in turns and at the last step, a step lasts at least 0.6 of the steps before it: stride
        /// times vary by 1-3 % from stride to stride (Hausdorff, J NeuroEng Rehabil 2005), and of the 16,500
        /// true step intervals in our recordings 0.1-0.5 % are shorter than 0.6 of the median of the six before.
        public var minimumPeriodFraction = 0.6
        /// Regularity while confirming: one stride may differ from the next by at most this fraction of a
        /// stride. Strides, not steps, are compared, because left and right steps differ on a one-sided
        /// carrier (a trouser pocket, an arm): in a back pocket the intervals alternate 0.40 s and 0.62 s.
        public var strideTolerance = 0.2
        /// While confirming, one step may last at most this many times the step before: even a limping or
        /// one-sided gait stays within about 1.6:1; handling jerks do not.
        public var stepAsymmetry = 2.0
        /// While confirming, the largest cycle of one foot may be at most this many times that foot's smallest
        /// (the cycles alternate feet: every other one is the same foot's), and the largest of all at most
        /// `crossFootAmplitudeSpread` times the smallest of all. A one-sided carrier (a trouser pocket, one
        /// hand) sees its own leg's footfall two to three times the other's: in the timed up-and-go walks of
        /// sp-sw-har a front-pocket phone's cycles alternate 10 and 4 m/s^2, while each foot's stay within 1.5:1.
        /// The limits across the feet (here and `shortBoutCrossFootSpread`) are chosen by tools/tune-foot-limits.
        public var amplitudeSpread = 4.0
        public var crossFootAmplitudeSpread = 6.0
        /// Inside a bout a cycle smaller than this fraction of the bout's step size is not a footfall.
        public var minimumAmplitudeFraction = 0.35
        /// Inside a bout a cycle that comes on the walk's rhythm (this range of step periods after the last step)
        /// needs only `rhythmAmplitudeFraction` of the bout's step size: the steps of a turn and the first and
        /// last of a walk are shorter and push the body up and down less, but people turn within the walking
        /// rhythm, stepping or spinning on one foot (Hase & Stein, J Neurophysiol 1999). Turning steps are also
        /// slower, never quicker: in lowerback-turns the true turn steps last a median 0.61 s against 0.56 s
        /// walking, a quarter of them over 0.76 s (a pivot); so a small cycle sooner than one period is a sway
        /// of the turn, and one up to 2.2 periods later is still a (slow) step.
        public var rhythmMinimumPeriods = 1.0
        public var rhythmMaximumPeriods = 2.2
        public var rhythmAmplitudeFraction = 0.2
        /// A short bout: this many cycles confirm a bout when they are evenly spaced (each interval within
        /// `shortBoutTolerance` of their median) and of one size foot by foot (each foot's largest at most
        /// `shortBoutAmplitudeSpread` times its smallest, and all within `shortBoutCrossFootSpread`). Walking from
        /// a desk to a door is four or five steps; handling is neither that even nor that uniform.
        public var shortBoutSteps = 4
        public var shortBoutTolerance = 0.15
        public var shortBoutAmplitudeSpread = 2.0
        public var shortBoutCrossFootSpread = 3.0
        /// Count the closing step when a bout ends: gait termination ends by bringing the trailing foot alongside,
        /// a footfall with almost no vertical motion of the body (Jian, Winter et al., Gait & Posture 1993), so
        /// it leaves no cycle. It is counted one step period after the last step.
        public var countsClosingStep = true
        /// Unless the posture changed during the pause (`postureChanged`): a person who sits down or puts the
        /// device down ends the walk with the sit or the handling, whose cycles the bout has already counted;
        /// the footfall one period later would fall on the chair.
        /// Inside a bout an interval of about two step periods (this range, in periods) means one footfall was
        /// too faint to see (an arm carrying something, a soft step): walking does not skip a step, so the
        /// missed one is counted at the middle of the interval. Only between two full-sized steps (at least
        /// `minimumAmplitudeFraction` of the bout's size): between two small turn cycles such an interval is one
        /// slow pivot step, which the foot takes while the body turns.
        public var missedStepMinimumPeriods = 1.6
        public var missedStepMaximumPeriods = 2.4
        /// Gait initiation: a walk starts with a push-off step that moves the body less than the steps after it
        /// (Jian, Winter et al., Gait & Posture 1993), so its cycle often misses the confirmation's size and
        /// rhythm tests. When a bout is confirmed, the cycle just before its run is counted too if it came this
        /// many step periods before the run's first and is at least `rhythmAmplitudeFraction` of the bout's size.
        /// The first step is not quicker than the walk: from the first heel strike to the second is at least 0.92
        /// of the next steps' period in 95 % of the bouts in our recordings (median 1.15 at the lower back, 1.08 on
        /// the phone), so a cycle sooner than 0.9 of a period before the run is the weight shift that precedes
        /// the first step (the anticipatory postural adjustment; Crenna & Frigo, J Physiol 1991), not a step.
        public var countsInitiationStep = true
        public var initiationMinimumPeriods = 0.9
        public var initiationMaximumPeriods = 1.5
        /// A stair descent doubles the walk's rhythm: people go down stairs at up to 3.6 steps a second (0.28 s a
        /// step) after walking at 1.8, so each footfall comes at half the bout's period, where a second crest of one
        /// footfall would (`minimumPeriodFraction`), and every other step was taken for one. A bout takes the quick
        /// rhythm when the last `shortBoutSteps` full-sized cycles (at least `minimumAmplitudeFraction` of the
        /// bout's size) are as even as a short bout's (`shortBoutTolerance`), the latest sooner than a step may
        /// come, and their interval is a stair descent's (`fastStepMinimumIntervalSeconds` to
        /// `fastStepMaximumIntervalSeconds`) and at most `fastStepMaximumPeriodFraction` of the bout's period. A second
        /// crest is not that even: it comes early or late in its step as the carrier swings. Inside the quick rhythm
        /// steps may come as often as the quick interval's lower limit; an interval longer than
        /// `missedStepMinimumPeriods` of it brings the bout back to the walk's rhythm (the stairs are over), where
        /// it would otherwise count a footfall missed.
        public var fastStepMinimumIntervalSeconds = 0.2
        public var fastStepMaximumIntervalSeconds = 0.36
        public var fastStepMaximumPeriodFraction = 0.75
        /// A cycle of the bout that comes while the posture has turned (`postureChanged`) waits, uncounted, for up
        /// to this many seconds: sitting down tilts a trouser pocket towards level and a wrist towards the lap,
        /// and the sit's own bounce is a cycle on the walk's rhythm. The cycle is counted when the next step of the
        /// bout is, or when a cycle of a turn step's size comes on the rhythm (the walk went on: a phone raised to
        /// read it, a wrist turned to open a door), or at the end of the wait if the posture has come back to the
        /// walk's; otherwise it was the sit, and is dropped. In the timed up-and-go walks of sp-sw-har, 18 of the
        /// 22 steps counted while seated were such a last cycle, the device turned 25-71° from the walk's steps.
        /// The wait ends before a step inside a bout is a second late; the next footfall is seen within it at
        /// usual cadences (a step of 0.6 s, and the 0.2-0.35 s it takes to see a cycle end). 0 counts every such
        /// cycle at once.
        public var turnedStepWaitSeconds = 0.95
        /// How fast the step period and size follow the walk (per step).
        public var periodFollowRate = 0.2
        public var amplitudeFollowRate = 0.1
        /// The walking gate (`WalkingGate`) must have been open since this cycle of the confirming run (0 is its
        /// first): since the third, about two seconds, so the gate's averages have seen the run itself and not the
        /// movement before it (an arm lifted to the head before combing), while a walk whose first steps come
        /// before the gate has settled is not held back for long.
        public var gateOpenFromCycle = 2

        public init() {}
    }

    public let configuration: Configuration
    public private(set) var isWalking = false
    /// The current step period, seconds (valid while walking).
    public private(set) var stepPeriodSeconds = 0.55
    /// The typical step cycle height of this bout, m/s^2.
    public private(set) var stepAmplitude = 0.0
    private var lastStepTime = -Double.infinity
    private var heldTimes: [Double] = []
    private var heldAmplitudes: [Double] = []
    /// The cycle just before the held ones (the last one dropped from them): the push-off of a bout to come.
    private var precursorTime = -Double.infinity
    private var precursorAmplitude = 0.0
    /// The size of the bout's last counted step.
    private var lastStepAmplitude = 0.0
    /// The times of the bout's last `shortBoutSteps` full-sized cycles, counted or not: whether the walk has
    /// taken a stair descent's quick rhythm.
    private var recentTimes: [Double] = []
    /// Whether the bout follows a stair descent's quick rhythm (`fastStepMinimumIntervalSeconds`).
    public private(set) var isFastRhythm = false
    /// The time of a cycle of the bout that came while the posture had turned, waiting to be counted
    /// (`turnedStepWaitSeconds`); nil when none waits.
    public private(set) var waitingStepTime: Double?
    private var scratch: [Double] = []
    /// Since when the motion has been gait, from the walking gate; the detector sets it before each cycle.
    /// +infinity while the gate is closed; -infinity (the default) lets every regular run confirm a bout.
    public var gateOpenSince = -Double.infinity
    /// Whether the direction of gravity the device sees has turned by a large angle since the bout's last steps
    /// (a thigh pocket when sitting down, a phone taken in hand); the detector sets it at each cycle of a bout and
    /// during its closing pause. The pause then counts no closing step, and a small cycle is no turn step: a body
    /// turning on its feet does not tilt what it carries, a sit or the hand's handling does.
    public var postureChanged = false

    public init(configuration: Configuration = .init()) {
        precondition(configuration.confirmationSteps >= 2, "a bout needs at least two steps")
        self.configuration = configuration
        heldTimes.reserveCapacity(configuration.confirmationSteps + 1)
        heldAmplitudes.reserveCapacity(configuration.confirmationSteps + 1)
        scratch.reserveCapacity(configuration.confirmationSteps + 1)
        recentTimes.reserveCapacity(configuration.shortBoutSteps + 1)
    }

    public mutating func reset() {
        isWalking = false
        isFastRhythm = false
        waitingStepTime = nil
        recentTimes.removeAll(keepingCapacity: true)
        postureChanged = false
        lastStepTime = -.infinity
        precursorTime = -.infinity
        heldTimes.removeAll(keepingCapacity: true)
        heldAmplitudes.removeAll(keepingCapacity: true)
    }

    /// Settles a step that waited while the posture had turned, once its wait is over, and ends a bout when the
    /// walk has paused for longer than a step can take, appending its closing step to `steps`; call once per
    /// sample, with `postureChanged` up to date while a step waits and during the pause.
    @inlinable
    public mutating func advance(to time: Double, steps: inout [Double]) {
        if let waiting = waitingStepTime, time - waiting >= configuration.turnedStepWaitSeconds { settleWaitingStep(steps: &steps) }
        if isWalking && time - lastStepTimeValue > configuration.maximumStepIntervalSeconds { endBout(steps: &steps) }
    }

    /// Counts the waiting step if the posture has come back (the walk went on), drops it if not (the sit).
    @usableFromInline
    mutating func settleWaitingStep(steps: inout [Double]) {
        if let waiting = waitingStepTime, !postureChanged { steps.append(waiting) }
        waitingStepTime = nil
    }

    @usableFromInline var lastStepTimeValue: Double { lastStepTime }

    @usableFromInline
    mutating func endBout(steps: inout [Double]) {
        settleWaitingStep(steps: &steps)
        isWalking = false
        heldTimes.removeAll(keepingCapacity: true)
        heldAmplitudes.removeAll(keepingCapacity: true)
        if configuration.countsClosingStep && !postureChanged {
            lastStepTime += stepPeriodSeconds
            steps.append(lastStepTime)
        }
        postureChanged = false
    }

    /// Ends a bout whose motion is no longer walking (the walking gate has stayed closed), without a closing step:
    /// the walk did not stop, it turned into something else. A step that waits is settled as at the end of its
    /// wait (`postureChanged` up to date). The next walk must confirm again.
    public mutating func abandon(steps: inout [Double]) {
        settleWaitingStep(steps: &steps)
        isWalking = false
        postureChanged = false
        heldTimes.removeAll(keepingCapacity: true)
        heldAmplitudes.removeAll(keepingCapacity: true)
    }

    /// Takes one gait cycle; appends the times of the steps it now knows to `steps`.
    public mutating func take(_ cycle: GaitCycle, steps: inout [Double]) {
        let c = configuration
        if isWalking {
            let interval = cycle.time - lastStepTime
            let inRhythm = interval >= c.rhythmMinimumPeriods * stepPeriodSeconds
                && interval <= c.rhythmMaximumPeriods * stepPeriodSeconds
            let onRhythm = !postureChanged && inRhythm
            let gate = onRhythm ? c.rhythmAmplitudeFraction : c.minimumAmplitudeFraction
            // The walk goes on: a cycle on its rhythm, at least a turn step's size, shows that the cycle waiting
            // while the posture had turned was a step, even when this one is too small to count while turned.
            if let waiting = waitingStepTime, inRhythm, cycle.amplitude >= c.rhythmAmplitudeFraction * stepAmplitude {
                steps.append(waiting)
                waitingStepTime = nil
            }
            var soon = interval < max(isFastRhythm ? c.fastStepMinimumIntervalSeconds : c.minimumStepIntervalSeconds,
                                      c.minimumPeriodFraction * stepPeriodSeconds)
            if cycle.amplitude >= c.minimumAmplitudeFraction * stepAmplitude {
                if recentTimes.count >= c.shortBoutSteps { recentTimes.removeFirst() }
                recentTimes.append(cycle.time)
                if soon && !isFastRhythm, let quick = fastRhythmInterval() {
                    isFastRhythm = true
                    stepPeriodSeconds = quick
                    soon = interval < c.fastStepMinimumIntervalSeconds
                }
            }
            if cycle.amplitude < gate * stepAmplitude || soon {
                return
            }
            if interval <= c.maximumStepIntervalSeconds {
                // The walk goes on: a step that waited while the posture had turned was the walk's.
                if let waiting = waitingStepTime {
                    steps.append(waiting)
                    waitingStepTime = nil
                }
                var interval = interval
                // Between two turn-sized cycles a long interval is one slow pivot step, not a missed footfall.
                let normalSize = c.minimumAmplitudeFraction * stepAmplitude
                if isFastRhythm && interval > c.missedStepMinimumPeriods * stepPeriodSeconds {
                    // Off the stairs: the walk's own rhythm again, not a footfall missed.
                    isFastRhythm = false
                    stepPeriodSeconds = interval
                } else if interval > c.missedStepMinimumPeriods * stepPeriodSeconds
                    && interval < c.missedStepMaximumPeriods * stepPeriodSeconds
                    && cycle.amplitude >= normalSize && lastStepAmplitude >= normalSize {
                    steps.append(lastStepTime + interval / 2)
                    interval /= 2
                }
                if postureChanged && c.turnedStepWaitSeconds > 0 {
                    waitingStepTime = cycle.time
                } else {
                    steps.append(cycle.time)
                }
                lastStepTime = cycle.time
                lastStepAmplitude = cycle.amplitude
                stepPeriodSeconds += (interval - stepPeriodSeconds) * c.periodFollowRate
                stepAmplitude += (cycle.amplitude - stepAmplitude) * c.amplitudeFollowRate
                return
            }
            endBout(steps: &steps)
        }
        // A cycle stamped before the closing step of the bout that has just ended belongs to that bout.
        if cycle.time <= lastStepTime { return }
        hold(cycle, steps: &steps)
    }

    private mutating func hold(_ cycle: GaitCycle, steps: inout [Double]) {
        let c = configuration
        if let last = heldTimes.last, cycle.time - last < c.minimumStepIntervalSeconds {
            // Two crests closer than any step: keep the larger as this footfall.
            if cycle.amplitude > heldAmplitudes[heldAmplitudes.count - 1] {
                heldTimes[heldTimes.count - 1] = cycle.time
                heldAmplitudes[heldAmplitudes.count - 1] = cycle.amplitude
            }
            return
        }
        if let last = heldTimes.last, cycle.time - last > c.maximumStepIntervalSeconds { dropHeld(keeping: 0) }
        heldTimes.append(cycle.time)
        heldAmplitudes.append(cycle.amplitude)
        let n = heldTimes.count
        if n >= 3 {
            let j1 = heldTimes[n - 1] - heldTimes[n - 2], j2 = heldTimes[n - 2] - heldTimes[n - 3]
            if max(j1, j2) > c.stepAsymmetry * min(j1, j2) { dropHeld(keeping: 2) }
        }
        if heldTimes.count >= 4 {
            let n = heldTimes.count
            let i1 = heldTimes[n - 1] - heldTimes[n - 2]
            let i2 = heldTimes[n - 2] - heldTimes[n - 3]
            let i3 = heldTimes[n - 3] - heldTimes[n - 4]
            // Same-foot intervals i1 and i3 should match to within a fraction of a stride (i1 + i2).
            if abs(i1 - i3) > c.strideTolerance * (i1 + i2) { dropHeld(keeping: 2) }
        }
        trimToConsistentAmplitude()
        if heldTimes.count >= c.confirmationSteps || isShortBout() {
            if gateOpenSince <= heldTimes[min(c.gateOpenFromCycle, heldTimes.count - 1)] {
                confirm(steps: &steps)
            } else if heldTimes.count >= c.confirmationSteps {
                // Regular, but not gait: keep sliding the run until the motion is.
                dropHeld(keeping: c.confirmationSteps - 1)
            }
        }
    }

    /// The interval of the recent full-sized cycles when they are a stair descent's quick, even rhythm; nil otherwise.
    private mutating func fastRhythmInterval() -> Double? {
        let c = configuration
        guard recentTimes.count == c.shortBoutSteps, c.shortBoutSteps >= 2 else { return nil }
        scratch.removeAll(keepingCapacity: true)
        for i in 1..<recentTimes.count { scratch.append(recentTimes[i] - recentTimes[i - 1]) }
        let typical = median(&scratch)
        guard typical >= c.fastStepMinimumIntervalSeconds,
              typical <= min(c.fastStepMaximumIntervalSeconds, c.fastStepMaximumPeriodFraction * stepPeriodSeconds) else { return nil }
        for i in 1..<recentTimes.count where abs(recentTimes[i] - recentTimes[i - 1] - typical) > c.shortBoutTolerance * typical {
            return nil
        }
        return typical
    }

    /// Whether the last `shortBoutSteps` held cycles are evenly spaced and of one size.
    private mutating func isShortBout() -> Bool {
        let c = configuration
        let n = heldTimes.count
        guard n >= c.shortBoutSteps, c.shortBoutSteps >= 2 else { return false }
        scratch.removeAll(keepingCapacity: true)
        for i in (n - c.shortBoutSteps + 1)..<n { scratch.append(heldTimes[i] - heldTimes[i - 1]) }
        let typical = median(&scratch)
        for interval in scratch where abs(interval - typical) > c.shortBoutTolerance * typical { return false }
        return sizesAgree(heldAmplitudes[(n - c.shortBoutSteps)...],
                          perFoot: c.shortBoutAmplitudeSpread, across: c.shortBoutCrossFootSpread)
    }

    /// Drops the oldest held cycles until the rest have a plausible spread of sizes.
    private mutating func trimToConsistentAmplitude() {
        let c = configuration
        var start = 0
        while start < heldAmplitudes.count - 1
                && !sizesAgree(heldAmplitudes[start...], perFoot: c.amplitudeSpread, across: c.crossFootAmplitudeSpread) {
            start += 1
        }
        if start > 0 { dropHeld(keeping: heldTimes.count - start) }
    }

    private mutating func dropHeld(keeping count: Int) {
        let drop = heldTimes.count - count
        guard drop > 0 else { return }
        precursorTime = heldTimes[drop - 1]
        precursorAmplitude = heldAmplitudes[drop - 1]
        heldTimes.removeFirst(drop)
        heldAmplitudes.removeFirst(drop)
    }

    private mutating func confirm(steps: inout [Double]) {
        let c = configuration
        scratch.removeAll(keepingCapacity: true)
        for i in 1..<heldTimes.count { scratch.append(heldTimes[i] - heldTimes[i - 1]) }
        stepPeriodSeconds = median(&scratch)
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: heldAmplitudes)
        stepAmplitude = median(&scratch)
        // The push-off; it must come after every step already reported, so that step times never go back.
        let lead = heldTimes[0] - precursorTime
        if c.countsInitiationStep && precursorTime > lastStepTime
            && lead >= c.initiationMinimumPeriods * stepPeriodSeconds
            && lead <= c.initiationMaximumPeriods * stepPeriodSeconds
            && precursorAmplitude >= c.rhythmAmplitudeFraction * stepAmplitude {
            steps.append(precursorTime)
        }
        steps.append(contentsOf: heldTimes)
        recentTimes.removeAll(keepingCapacity: true)
        recentTimes.append(contentsOf: heldTimes.suffix(c.shortBoutSteps))
        isFastRhythm = false
        lastStepAmplitude = heldAmplitudes[heldAmplitudes.count - 1]
        lastStepTime = heldTimes[heldTimes.count - 1]
        isWalking = true
        precursorTime = -.infinity
        heldTimes.removeAll(keepingCapacity: true)
        heldAmplitudes.removeAll(keepingCapacity: true)
    }
}

/// Whether consecutive cycle sizes, which alternate feet, agree foot by foot (each foot's largest at most `perFoot`
/// times its smallest) and overall (the largest at most `across` times the smallest).
func sizesAgree(_ sizes: ArraySlice<Double>, perFoot: Double, across: Double) -> Bool {
    var low = (Double.infinity, Double.infinity), high = (0.0, 0.0)
    var first = true
    for a in sizes {
        if first { low.0 = min(low.0, a); high.0 = max(high.0, a) } else { low.1 = min(low.1, a); high.1 = max(high.1, a) }
        first.toggle()
    }
    return high.0 <= perFoot * low.0 && high.1 <= perFoot * low.1
        && max(high.0, high.1) <= across * min(low.0, low.1)
}

/// The median of a few values (sorts them in place); the mean of the middle two for an even count.
func median(_ values: inout [Double]) -> Double {
    values.sort()
    let n = values.count
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2])
}
