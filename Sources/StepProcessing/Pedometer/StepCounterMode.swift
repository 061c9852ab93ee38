/// Who counts the steps now: stepd's detector on captured samples, or the accelerometer's own step counter
/// (the kernel's `in_steps_input`) while capture is off (`--sensor-step-counter`, docs/iio.md).
public enum StepCounting: String, Sendable, Equatable {
    case detector
    case sensor
}

/// What the daemon tells a source in the sensor-counter mode: whether someone watches MOTION (which needs
/// samples) and the steps counted so far (while capturing, the detector's), to compare with the counter.
public struct CaptureDemand: Sendable, Equatable {
    public var motionWatched: Bool
    public var steps: Int

    public init(motionWatched: Bool, steps: Int) {
        self.motionWatched = motionWatched
        self.steps = steps
    }
}

/// The sensor-counter mode's decision, without I/O: when buffered capture may stop and the sensor's own
/// counter count instead, and when capture must come back.
///
/// Capture stops when, over the last `windowSeconds` of capture, either nothing moved (neither the counter
/// nor the detector counted a step: the wearer is still) or both counted a walk and agree (at least
/// `minimumSteps`, within `toleranceSteps` or `toleranceFraction`: walking steadily, where the counter is as
/// good as the detector). It comes back for a MOTION watcher, and when the counter moves after a still
/// stretch (a bout starts: the detector then judges its start and its cadence until it agrees again). A
/// counter that disagrees with the detector (arm motion it takes for steps, or steps it misses) never
/// takes over.
public struct StepCounterMode: Sendable {
    public struct Settings: Sendable {
        public var windowSeconds = 10.0
        public var minimumSteps = 10
        public var toleranceSteps = 2
        public var toleranceFraction = 0.1
        /// The counter's read pace while it counts: each read wakes the CPU once. Still, a bout's start is
        /// seen within this; walking, the steps reach watchers within this.
        public var stillReadSeconds = 5.0
        public var walkingReadSeconds = 2.0
        public init() {}
    }

    public enum Action: Equatable, Sendable {
        case capture
        case countWithSensor
    }

    public let settings: Settings
    public private(set) var capturing = true
    /// Why capture stopped or came back last, for the log.
    public private(set) var reason = "start"
    private var window: [(time: Double, counter: Int, steps: Int)] = []
    private var lastCounter: Int?
    /// Whether the counter moved at its last read while counting (or capture stopped on a steady walk).
    private var walking = false

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// How long to wait before the next read while the sensor counts.
    public var readInterval: Double { walking ? settings.walkingReadSeconds : settings.stillReadSeconds }

    /// While capturing, at each refill: the counter's value and the steps counted so far.
    public mutating func captured(at time: Double, counter: Int, demand: CaptureDemand) -> Action {
        window.append((time, counter, demand.steps))
        while window.count > 1, window[1].time <= time - settings.windowSeconds { window.removeFirst() }
        guard !demand.motionWatched, let first = window.first else { return .capture }
        let counted = counter - first.counter, detected = demand.steps - first.steps
        if counted < 0 || detected < 0 {
            // The counter restarted (a driver reloaded) or the steps were reset: judge from here.
            window = [(time, counter, demand.steps)]
            return .capture
        }
        guard time - first.time >= settings.windowSeconds * 0.9 else { return .capture }
        if counted == 0 && detected == 0 {
            return stop(counter, walking: false, reason: "still for \(Int(settings.windowSeconds)) s")
        }
        let tolerance = max(Double(settings.toleranceSteps), settings.toleranceFraction * Double(counted))
        if counted >= settings.minimumSteps, Double(abs(counted - detected)) <= tolerance {
            return stop(counter, walking: true,
                        reason: "walking steadily: the counter's \(counted) steps and the detector's \(detected) agree")
        }
        return .capture
    }

    /// While the sensor counts, at each read.
    public mutating func read(counter: Int, motionWatched: Bool) -> Action {
        defer { lastCounter = counter }
        if motionWatched { return resume(reason: "a MOTION watcher") }
        let moved = lastCounter.map { counter > $0 } ?? false
        if moved && !walking { return resume(reason: "the counter moved after a still stretch: a bout starts") }
        walking = moved
        return .countWithSensor
    }

    private mutating func stop(_ counter: Int, walking: Bool, reason: String) -> Action {
        capturing = false
        self.walking = walking
        self.reason = reason
        lastCounter = counter
        window.removeAll()
        return .countWithSensor
    }

    private mutating func resume(reason: String) -> Action {
        capturing = true
        self.reason = reason
        window.removeAll()
        return .capture
    }
}

/// The daemon's side of the sensor-counter mode, without I/O: which of the detector's steps count, and the
/// steps the counter adds between two reads while it counts, so that at a switch no step is counted twice
/// nor lost. A switch at time T: the detector's steps up to T count, the counter's increments after its
/// value at T count (a switch to the detector: the counter's increments up to T count, the detector's steps
/// after T). The counter gives no step times: its increments are spread evenly over the interval.
public struct StepCounterLedger: Sendable {
    public private(set) var counting: StepCounting = .detector
    private var switchTime = -Double.infinity
    private var baseline: (value: Int, time: Double)?
    /// Faster than any walker (4 steps a second) plus a margin: a larger jump is a counter that restarted
    /// or another device, not steps.
    public static let mostStepsPerSecond = 5.0
    public private(set) var implausibleJumps = 0

    public init() {}

    public func countsDetectorStep(at time: Double) -> Bool {
        counting == .detector ? time > switchTime : time <= switchTime
    }

    /// A read of the counter at `time`, and who counts after it; returns the times of the steps it adds.
    public mutating func read(_ value: Int, at time: Double, countingAfter next: StepCounting) -> [Double] {
        var steps: [Double] = []
        if counting == .sensor, let base = baseline, value > base.value, time > base.time {
            let n = value - base.value
            if Double(n) <= (time - base.time) * Self.mostStepsPerSecond + 10 {
                let span = time - base.time
                steps = (1...n).map { base.time + span * Double($0) / Double(n) }
            } else {
                implausibleJumps += 1
            }
        }
        if next != counting { switchTime = time }
        counting = next
        baseline = (value, time)
        return steps
    }
}
