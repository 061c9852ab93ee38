import Foundation
import StepProcessing
import StepProtocol

/// Sample intake: batches from the source's thread run on the processing queue (on the source's thread), which runs them through the
/// pipeline, counts the steps and tells the watchers.
extension Engine {
    // MARK: SampleSink

    public func receive(_ samples: [Sample]) {
        let arrival = clock.now
        if let last = samples.last(where: SamplePlausibility.isPlausible) {
            pressureInbox.withLockedValue { $0.newestSampleTime = last.time }
        }
        // Sync, not async: libdispatch runs the block on this (the source's) thread when the queue is free, so
        // a batch wakes no worker (docs/architecture.md, "Threads"). The source waits meanwhile; nothing on the
        // queue ever waits for a source's thread, and the kernel buffer holds scans while it waits.
        queue.sync { [self] in withState { process(samples, arrivedAt: arrival, &$0) } }
    }

    public func sourceStateChanged(_ state: SourceState) {
        queue.async { [self] in
            withState { s in
                guard s.source.state != state else { return }
                if case .waiting(let reason) = state {
                    // Expected on a board whose driver loads late: a notice, not a warning.
                    logger.notice("source \(s.source.description): waiting for an accelerometer: \(reason)")
                } else if let reason = state.reason {
                    logger.warning("source \(s.source.description): \(state.name): \(reason)")
                } else {
                    logger.info("source \(s.source.description): \(state.name)")
                }
                s.source.state = state
                pressureInbox.withLockedValue { $0.batchesComing = state == .running }
                takeWaitingReadings(&s)
                // No more samples will bring steps for the pressure readings held, nor tell the walk has
                // stopped (a replay that ended, a device gone).
                let change = state != .running ? s.floors.countHeld() : nil
                if let change { countToday(change, wall: s.wall(ofSampleTime: change.time), &s) }
                let snapshot = publish(s)
                if let change { announce(change, wall: s.wall(ofSampleTime: change.time), snapshot: snapshot, s) }
                if state != .running {
                    endWalk(pauseDetectedAt: s.lastSampleWall, &s)
                    // No more steps can join the bout in progress: it ends with the samples.
                    var ended: [ActivityBout] = []
                    s.bouts.finish { ended.append($0) }
                    announce(ended, s)
                }
            }
        }
    }

    public func samplesRejected(_ count: Int) {
        sourceRejected.withLockedValue { $0 += count }
    }

    /// Counted on the queue, after the batch that showed the gap, so that its time is the samples' own.
    public func samplesLost(_ count: Int, from: Double, to: Double) {
        queue.async { [self] in
            withState { s in
                s.samplesLost += count
                s.samplesLostAt = s.wall(ofSampleTime: from)
                publish(s)
            }
        }
    }

    public func sourceIdentified(kind: String, description: String) {
        queue.async { [self] in
            withState { s in
                logger.debug("source: now \(kind) \(description) (was \(s.source.kind) \(s.source.description))")
                s.source.kind = kind
                s.source.description = description
                publish(s)
            }
        }
    }

    /// The accelerometer's own step counter (IIO in_steps_input), reported beside ours in STEPS, read at each
    /// refill: kept aside and published with the batch that follows at once, rather than costing the
    /// processing queue a wake-up of its own.
    public func hardwareStepsChanged(_ steps: Int) {
        latestHardwareSteps.withLockedValue { $0 = steps }
    }

    // MARK: Processing (on `queue`)

    func process(_ samples: [Sample], arrivedAt arrival: Date, _ s: inout EngineState) {
        // Clocks advance only with samples the pipeline keeps: an impossible one (NaN, 1e300) says nothing.
        guard let last = samples.last(where: SamplePlausibility.isPlausible) else {
            s.pipeline.process(samples) { _ in }
            publish(s)
            return
        }
        let wantMotion = motionWanted.withLockedValue { $0 }
        // The batch's last sample arrived now; any instant on the sample clock is that far before it.
        func wall(_ t: Double) -> Date { arrival.addingTimeInterval(t - last.time) }
        var newSteps: [Double] = []
        // The pipeline is a class: held apart, so that the closure may change the rest of the state meanwhile.
        let pipeline = s.pipeline
        pipeline.process(samples, onUniformSample: { uniform in
            s.gait.add(uniform)
            let estimate = s.motion.update(uniform)
            s.lastMotion = estimate
            if wantMotion {
                emit(.motion(estimate, time: wall(uniform.time), sampleTime: uniform.time))
            }
        }, onStep: { newSteps.append($0) })
        // In the sensor-counter mode the sensor counts the steps after a switch (Engine+HardwareSteps.swift).
        let ledger = sensorCounter.withLockedValue { $0.ledger }
        newSteps.removeAll { !ledger.countsDetectorStep(at: $0) }
        s.lastSampleTime = last.time
        s.lastSampleWall = arrival
        s.rate.measure(count: samples.count, until: last.time)
        if !newSteps.isEmpty { armStallTimer(lastStepAt: arrival, &s) }
        let newDay = s.day.advance(to: arrival, zone: dayZone)
        if newDay { scheduleMidnight(&s) }
        countSteps(newSteps, wall: wall, &s)
        var endedBouts: [ActivityBout] = []
        for t in newSteps {
            s.gait.step(at: t)
            s.bouts.step(at: t) { endedBouts.append($0) }
        }
        s.bouts.advance(to: last.time) { endedBouts.append($0) }
        takeWaitingReadings(&s)
        let floorChange = s.floors.advance(to: last.time)
        if let floorChange { countToday(floorChange, wall: wall(floorChange.time), &s) }
        let pause = s.activity.advance(to: last.time)
        let snapshot = publish(s)
        if let floorChange {
            announce(floorChange, wall: wall(floorChange.time), snapshot: snapshot, s)
            s.lastPedometerPush = last.time
        }
        // The final figures of a walk go out before the word that it has stopped.
        if pause != nil || newDay || (!newSteps.isEmpty && last.time - s.lastPedometerPush >= 1) {
            s.lastPedometerPush = last.time
            emit(.pedometer(snapshot))
        }
        if let (_, pauseStart) = pause {
            emit(.activity(.stationary, time: wall(pauseStart)))
        }
        announce(endedBouts, s)
    }

    /// Measures each ended bout's gait and tells the watchers.
    func announce(_ bouts: [ActivityBout], _ s: EngineState) {
        for bout in bouts {
            let measured = GaitBout(bout: bout, gait: s.gait.measures(from: bout.start, to: bout.end))
            let event = EngineEvent.bout(measured, start: s.wall(ofSampleTime: bout.start), end: s.wall(ofSampleTime: bout.end),
                                         placement: configuration.placement)
            emit(event)
        }
    }

    /// Ends a walk that samples can no longer end, and tells the watchers. The cadence ends with it: no
    /// step is coming to make it fall to zero by itself.
    func endWalk(pauseDetectedAt wallNow: Date, _ s: inout EngineState) {
        s.cadence.reset()
        guard let (_, pauseStart) = s.activity.advance(to: .infinity) else {
            publish(s)
            return
        }
        let wall = wallNow.addingTimeInterval(pauseStart - s.lastSampleTime)
        let snapshot = publish(s)
        emit(.pedometer(snapshot))
        emit(.activity(.stationary, time: wall))
    }
}
