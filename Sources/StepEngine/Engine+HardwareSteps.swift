import Foundation
import StepProcessing
import StepProtocol

/// The sensor-counter mode's state on the daemon's side: the ledger (on `queue`) and what STATUS says.
struct SensorCounterState: Sendable {
    var ledger = StepCounterLedger()
    /// STATUS's `steps.sensor_counter`: `off`, `waiting` (asked for, no device read yet), `on`, `no counter`.
    var mode = "off"
}

/// The sensor-counter mode (`--sensor-step-counter`, IIOStepCounterMode): the counter's reads come here, and
/// the steps it counted while capture was off go to the same totals, history and watchers as the detector's.
extension Engine {
    /// STATUS's `steps` object: who counts now, and the mode.
    public var stepCountingStatus: StepCountingStatus {
        let state = sensorCounter.withLockedValue { $0 }
        return StepCountingStatus(counting: state.ledger.counting.rawValue, sensor_counter: state.mode)
    }

    public func sensorStepCounterAvailable(_ available: Bool?) {
        sensorCounter.withLockedValue { $0.mode = available.map { $0 ? "on" : "no counter" } ?? "waiting" }
    }

    public func captureDemand() -> CaptureDemand {
        CaptureDemand(motionWatched: motionWanted.withLockedValue { $0 }, steps: snapshot.steps)
    }

    public func stepCounterRead(_ steps: Int, at time: Double, countingAfter counting: StepCounting) {
        let arrival = clock.now
        if steps >= 0 { latestHardwareSteps.withLockedValue { $0 = steps } }
        // Sync on the source's thread, as a batch of samples is (Engine.receive): a read wakes no worker.
        queue.sync { [self] in withState { countSensorSteps(steps, at: time, countingAfter: counting, arrivedAt: arrival, &$0) } }
    }

    private func countSensorSteps(_ value: Int, at time: Double, countingAfter next: StepCounting,
                                  arrivedAt arrival: Date, _ s: inout EngineState) {
        let (before, steps, jumps) = sensorCounter.withLockedValue { state in
            let before = state.ledger.counting
            let jumps = state.ledger.implausibleJumps
            return (before, state.ledger.read(value, at: time, countingAfter: next), state.ledger.implausibleJumps - jumps)
        }
        if jumps > 0 { logger.warning("the sensor's step counter jumped to \(value): taken as a restart, not as steps") }
        if before != next { logger.info("steps: now counted by the \(next == .sensor ? "sensor's own counter" : "detector")") }
        // Between reads the sample clock advances with the counter's reads: nothing else moves it.
        guard before == .sensor || !steps.isEmpty else {
            if before != next { publish(s) }
            return
        }
        func wall(_ t: Double) -> Date { arrival.addingTimeInterval(t - time) }
        if time > s.lastSampleTime {
            s.lastSampleTime = time
            s.lastSampleWall = arrival
            pressureInbox.withLockedValue { $0.newestSampleTime = max($0.newestSampleTime, time) }
        }
        if !steps.isEmpty { armStallTimer(lastStepAt: arrival, &s) }
        let newDay = s.day.advance(to: arrival, zone: dayZone)
        if newDay { scheduleMidnight(&s) }
        countSteps(steps, wall: wall, &s)
        takeWaitingReadings(&s)
        let floorChange = s.floors.advance(to: time)
        if let floorChange { countToday(floorChange, wall: wall(floorChange.time), &s) }
        let pause = s.activity.advance(to: time)
        let snapshot = publish(s)
        if let floorChange { announce(floorChange, wall: wall(floorChange.time), snapshot: snapshot, s) }
        if pause != nil || newDay || !steps.isEmpty {
            s.lastPedometerPush = time
            emit(.pedometer(snapshot))
        }
        if let (_, pauseStart) = pause {
            emit(.activity(.stationary, time: wall(pauseStart)))
        }
    }

    /// Counts steps (the detector's or the counter's) into the totals, today, floors, cadence and the walk,
    /// and tells the watchers.
    func countSteps(_ times: [Double], wall: (Double) -> Date,
                    _ s: inout EngineState) {
        for t in times {
            s.steps = s.steps.addingSaturated(1)
            s.distanceMeters += s.stride.strideMeters
            s.day.step(at: wall(t), distanceMeters: s.stride.strideMeters)
            s.floors.step(at: t)
            s.cadence.record(stepAt: t)
            if s.activity.step(at: t) == .walking {
                emit(.activity(.walking, time: wall(t)))
            }
            emit(.step(count: s.steps, time: wall(t), strideMeters: s.stride.strideMeters))
        }
    }
}
