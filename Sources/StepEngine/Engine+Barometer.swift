import Foundation
import StepProcessing
import StepProtocol

/// The barometer and the floors: readings wait in the inbox for the batch that brings the steps around them
/// (StepAlignedFloors, as `stepd analyze` counts them), and floors counted go to today's figures and the watchers.
extension Engine {
    // MARK: BarometerSink (IIOBarometerSource, or a replay's pressure file)

    /// A barometer reading: from the first one on, floors are counted. The reading waits until the steps
    /// around it are known, the detector's hold-back after its time (StepAlignedFloors, as `stepd analyze`),
    /// and is counted with the batch of samples that brings them (`process`, which takes it from the inbox).
    public func receive(pressure: PressureReading) {
        let hop = pressureInbox.withLockedValue { inbox -> Bool in
            inbox.readings.append(pressure)
            return !inbox.batchesComing || inbox.readings.count > PressureInbox.mostWaiting
        }
        guard hop else { return }
        queue.async { [self] in
            withState { s in
                guard let newest = takeWaitingReadings(&s) else { return }
                // No step is coming for the readings held while the accelerometer is not running, or has sent
                // nothing for longer than the hold-back (both clocks are the monotonic one, or a replay's).
                // Sent, not processed: samples still queued behind this block bring the steps the readings
                // wait for.
                let newestSample = pressureInbox.withLockedValue { $0.newestSampleTime }
                let stalled = s.source.state != .running || newest.time - newestSample > stepHoldBackSeconds
                let change = stalled ? s.floors.countHeld() : nil
                let changeWall = change.map { clock.now.addingTimeInterval($0.time - newest.time) }
                if let change, let changeWall { countToday(change, wall: changeWall, &s) }
                let snapshot = publish(s)
                if let change, let changeWall { announce(change, wall: changeWall, snapshot: snapshot, s) }
            }
        }
    }

    public func barometerStateChanged(_ state: SourceState) {
        queue.async { [self] in
            withState { s in
                guard s.barometer.state != state else { return }
                let name = s.barometer.description.isEmpty ? "barometer" : "barometer \(s.barometer.description)"
                if case .waiting(let reason) = state {
                    logger.notice("\(name): waiting for one: \(reason)")
                } else if case .unavailable(let reason) = state, s.barometer.kind == "none" {
                    logger.debug("\(name): \(reason)")
                } else if let reason = state.reason {
                    logger.warning("\(name): \(state.name): \(reason)")
                } else {
                    logger.info("\(name): \(state.name)")
                }
                s.barometer.state = state
                publish(s)
            }
        }
    }

    public func barometerIdentified(kind: String, description: String, rateHz: Double?) {
        queue.async { [self] in
            withState { s in
                s.barometer.kind = kind
                s.barometer.description = description
                s.barometer.rateHz = rateHz
                publish(s)
            }
        }
    }

    // MARK: On `queue`

    /// Moves the readings waiting in the inbox to the floor counter's hold; returns the newest.
    @discardableResult
    func takeWaitingReadings(_ s: inout EngineState) -> PressureReading? {
        let readings = pressureInbox.withLockedValue { inbox -> [PressureReading] in
            defer { inbox.readings.removeAll(keepingCapacity: true) }
            return inbox.readings
        }
        for reading in readings { s.floors.add(reading) }
        if let newest = readings.last { s.barometer.lastKilopascal = newest.kilopascal }
        return readings.last
    }

    /// Floors counted, into today's figures when they fall today.
    func countToday(_ change: FloorChange, wall: Date, _ s: inout EngineState) {
        s.day.floors(ascended: change.added.ascended, descended: change.added.descended, at: wall)
    }

    /// Floors counted: news for the history and for PEDOMETER watchers even when no step follows them.
    func announce(_ change: FloorChange, wall: Date, snapshot: EngineSnapshot, _ s: EngineState) {
        logger.debug("barometer: floors \(change.total.ascended) up, \(change.total.descended) down, at \(String(format: "%.1f", s.floors.counter.relativeAltitudeMeters ?? 0)) m")
        emit(.floors(added: change.added, total: change.total, time: wall))
        emit(.pedometer(snapshot))
    }
}
