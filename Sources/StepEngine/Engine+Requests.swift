import Foundation
import StepProcessing

/// What clients and the store ask of the engine: a reset, a stride calibrated by GPS, and the count an earlier
/// run saved, taken over at start or added once a store away at start comes back.
extension Engine {
    /// A stretch walked with a good GPS fix, to calibrate the stride.
    public func calibrateStride(gpsDistanceMeters: Double, steps: Int) {
        queue.async { [self] in
            withState { s in
                if s.stride.calibrate(gpsDistanceMeters: gpsDistanceMeters, steps: steps) {
                    logger.info("stride calibrated from GPS: \(String(format: "%.2f", s.stride.strideMeters)) m")
                    publish(s)
                }
            }
        }
    }

    /// Starts counting from zero now (the seed's reset button); replies with the fresh snapshot.
    public func reset(completion: @escaping @Sendable (EngineSnapshot) -> Void) {
        queue.async { [self] in
            // The observers hear of the reset (the store records it) before the reply.
            let snapshot = withState { s in
                s.steps = 0
                s.distanceMeters = 0
                s.restoredSteps = 0
                s.restoredFloors = false
                s.since = clock.now
                s.cadence.reset()
                s.activity.reset()
                s.floors.reset()
                emit(.reset(since: s.since))
                return publish(s)
            }
            completion(snapshot)
        }
    }

    // MARK: Persistence (the store)

    /// Goes on from a count saved by an earlier run (its steps, their distance, and its floors when it had a
    /// barometer); called before the source starts. The floors show at once, and stay once this run's barometer
    /// is known to be there (EngineState.snapshot).
    public func restore(steps: Int, since: Date, distanceMeters: Double = 0, floors saved: FloorCounts?) {
        queue.sync {
            withState { s in
                s.steps = steps
                s.distanceMeters = distanceMeters
                s.since = since
                s.restoredSteps = steps
                s.restoredFloors = saved != nil
                if let saved { s.floors.resume(from: saved) }
                publish(s)
            }
        }
    }

    /// Rebuilds today's figures from what an earlier run saved of today (the store's minute bins since local
    /// midnight); called at start, before the source starts.
    public func restoreToday(_ minutes: [DayCounter.SavedMinute], floorsDescended: Int?) {
        queue.sync {
            withState { s in
                if s.day.advance(to: clock.now, zone: dayZone) { scheduleMidnight(&s) }
                s.day.restore(minutes, floorsDescended: floorsDescended)
                publish(s)
            }
        }
    }

    /// Adds a count saved by an earlier run that the store could read only after counting had begun without
    /// it (a store away at start): STEPS goes on from the sum, never from 0 nor from the saved count alone, and
    /// so do the floors. `completion` gets the new count on the processing queue, so it reaches the store in
    /// order with the steps (floors nil while neither run has had a barometer).
    public func add(saved: (steps: Int, since: Date, distanceMeters: Double, floors: FloorCounts?),
                    completion: @escaping @Sendable (Int, Date, Double, FloorCounts?) -> Void) {
        queue.async { [self] in
            let counted = withState { s in
                s.steps = s.steps.addingSaturated(saved.steps)
                s.distanceMeters += saved.distanceMeters
                s.restoredSteps = s.restoredSteps.addingSaturated(saved.steps)
                s.since = min(s.since, saved.since)
                if let floorsSaved = saved.floors { s.floors.resume(from: s.floors.counter.counts + floorsSaved) }
                publish(s)
                return (s.steps, s.since, s.distanceMeters,
                        s.floors.hasReadings || saved.floors != nil ? s.floors.counter.counts : nil)
            }
            completion(counted.0, counted.1, counted.2, counted.3)
        }
    }
}
