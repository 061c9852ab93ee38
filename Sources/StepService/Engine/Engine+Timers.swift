import Dispatch
import Foundation
import StepProcessing
import StepProtocol

/// The two timers on the processing queue: the walk that ends when steps stop without samples to say so, and
/// the day that starts at local midnight when no batch comes to start it.
extension Engine {
    /// Steps that stop with the samples (a source stalled without a word) would leave the cadence and the
    /// walk as they were. One timer fires once steps may have stopped for longer than the walk detector waits;
    /// if the samples did not end the walk meanwhile, it ends it here. A batch with steps only notes the time:
    /// rescheduling a dispatch timer wakes libdispatch's manager thread, which on every batch was a fourth
    /// wake-up per batch; instead the timer, when it fires during a walk, goes again for the time left.
    func armStallTimer(lastStepAt wall: Date, _ s: inout EngineState) {
        s.lastStepWall = wall
        if !s.stallTimerArmed { scheduleStallTimer(after: Self.stallSeconds, &s) }
    }

    private func scheduleStallTimer(after seconds: Double, _ s: inout EngineState) {
        let timer = s.stallTimer ?? {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.stallTimerFired() }
            timer.activate()
            return timer
        }()
        s.stallTimer = timer
        timer.schedule(deadline: .now() + seconds, leeway: .milliseconds(250))
        s.stallTimerArmed = true
    }

    /// Longer than ActivityTracker's 2.5 s pause and a buffered source's 0.7 s between batches.
    static let stallSeconds = 4.0

    private func stallTimerFired() {
        withState { s in
            s.stallTimerArmed = false
            guard let lastStepWall = s.lastStepWall else { return }
            let quiet = Date().timeIntervalSince(lastStepWall)
            if quiet < Self.stallSeconds - 0.5 { return scheduleStallTimer(after: Self.stallSeconds - quiet, &s) }
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
        let timer = s.midnightTimer ?? {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.midnightPassed() }
            timer.activate()
            return timer
        }()
        s.midnightTimer = timer
        let wait = max(0, s.day.today.end.timeIntervalSinceNow) + 0.01
        timer.schedule(deadline: .now() + wait, leeway: .milliseconds(100))
    }

    private func midnightPassed() {
        withState { s in
            defer { scheduleMidnight(&s) }
            guard s.day.advance(to: Date(), calendar: dayCalendar) else { return }
            logger.debug("a new day: today's figures start from zero at \(Timestamp.string(s.day.today.start))")
            let snapshot = publish(s)
            for handler in handlers { handler(.pedometer(snapshot)) }
        }
    }
}
