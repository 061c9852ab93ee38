import Dispatch
import Foundation
import StepProcessing
import StepProtocol
import Timekeeping

/// The two timers on the processing queue: the walk that ends when steps stop without samples to say so, and
/// the day that starts at local midnight when no batch comes to start it.
extension Engine {
    /// Steps that stop with the samples (a source stalled without a word) would leave the cadence and the
    /// walk as they were. A deadline `stallSeconds` after the last batch with steps ends the walk if the
    /// samples did not end it meanwhile. Every batch with steps moves it (the clock's quiet deadline: one system
    /// call, no wake-up), so while walking it never fires; a dispatch timer would wake libdispatch's timer thread
    /// at every move (docs/architecture.md, "Timers").
    ///
    /// Which sources need it: a buffered IIO source says `.disconnected` itself when a refill times out (four
    /// buffer periods, at least 2 s) and a replay says `.finished` at its end, and either ends the walk at
    /// once (Engine+Samples); a polled IIO source blocked in a read, or a replay in a pause of its recording,
    /// say nothing, and only this deadline ends their walk.
    func armStallTimer(lastStepAt wall: Date, _ s: inout EngineState) {
        s.lastStepWall = wall
        stallDeadline(&s).schedule(after: Self.stallSeconds)
    }

    private func stallDeadline(_ s: inout EngineState) -> any ClockTimer {
        if let deadline = s.stallDeadline { return deadline }
        let deadline = clock.makeQuietDeadline(queue: queue) { [weak self] in self?.stallTimerFired() }
        s.stallDeadline = deadline
        return deadline
    }

    /// Longer than ActivityTracker's 2.5 s pause and a buffered source's 0.7 s between batches.
    static let stallSeconds = 4.0

    private func stallTimerFired() {
        withState { s in
            guard let lastStepWall = s.lastStepWall else { return }
            let quiet = clock.now.timeIntervalSince(lastStepWall)
            // Moved just as it expired, or the wall clock stepped: go again for the time left.
            if quiet < Self.stallSeconds - 0.5 {
                return stallDeadline(&s).schedule(after: Self.stallSeconds - max(0, quiet))
            }
            guard s.activity.state == .walking || s.cadence.stepsPerMinute(now: s.lastSampleTime) > 0 else { return }
            logger.debug("no step for \(Int(Self.stallSeconds)) s and no sample to say so: the walk ends here")
            endWalk(pauseDetectedAt: s.lastSampleWall, &s)
        }
    }

    /// At local midnight today's figures start from zero, and PEDOMETER watchers (and MQTT) are told so even
    /// when no step comes (a batch that finds the new day first does the same). The deadline is on the monotonic
    /// clock, which costs the dispatch manager no wake-ups on the way; a clock set meanwhile is caught by the
    /// next batch, or by the timer firing early and going again for the time left.
    func scheduleMidnight(_ s: inout EngineState) {
        let timer = s.midnightTimer ?? clock.makeTimer(queue: queue) { [weak self] in self?.midnightPassed() }
        s.midnightTimer = timer
        let wait = max(0, s.day.today.end.timeIntervalSince(clock.now)) + 0.01
        timer.schedule(after: wait, repeating: nil, leewaySeconds: 0.1)
    }

    private func midnightPassed() {
        withState { s in
            defer { scheduleMidnight(&s) }
            guard s.day.advance(to: clock.now, zone: dayZone) else { return }
            logger.debug("a new day: today's figures start from zero at \(Timestamp.string(s.day.today.start))")
            let snapshot = publish(s)
            emit(.pedometer(snapshot))
        }
    }
}
