import Foundation
import StepProcessing
import StepProtocol

/// The engine's position side: fixes from the gpsd thread hop onto the processing queue like samples.
extension Engine: FixSink {
    public func receive(fix: Fix) {
        queue.async { [self] in
            withState { s in
                let before = s.locationTracker.state
                let events = s.locationTracker.receive(fix, steps: s.steps)
                logGPSTransition(from: before, s.locationTracker)
                publishLocation(s)
                if let stretch = s.locationTracker.takeCompletedStretch() {
                    calibrateStride(gpsDistanceMeters: stretch.meters, steps: stretch.steps)
                }
                guard !events.isEmpty else { return }
                let handlers = self.handlers
                for event in events {
                    for handler in handlers { handler(.location(event)) }
                }
            }
        }
    }

    public func gpsConnectionChanged(_ state: GPSConnectionState) {
        queue.async { [self] in
            withState { s in
                let before = s.locationTracker.heardFromSource ? s.locationTracker.state : "starting"
                s.locationTracker.connectionChanged(state)
                logGPSTransition(from: before, s.locationTracker)
                publishLocation(s)
            }
        }
    }

    /// The latest published position state; cheap, safe from any thread.
    public var locationSnapshot: LocationSnapshot { publishedLocation.withLockedValue { $0 } }

    /// The path in memory and its length, for a track document. The path is copied on the processing queue (a
    /// copy-on-write array: no work) and handed over from there; the document is written out by the server a
    /// piece at a time (TrackReply), never on the processing queue.
    public func trackPath(completion: @escaping @Sendable ([TrackPoint], Double) -> Void) {
        queue.async { [self] in
            let (points, meters) = withState { s in (s.locationTracker.track.points, s.locationTracker.track.distanceMeters) }
            completion(points, meters)
        }
    }

    /// The visits kept (restored from the store, then this run's), oldest first, read on the processing queue.
    public func listVisits(completion: @escaping @Sendable ([Visit]) -> Void) {
        queue.async { [self] in completion(withState { $0.locationTracker.allVisits }) }
    }

    /// Continues the path and visits saved by an earlier run; called before the GPS source starts.
    public func restoreLocation(points: [Fix], visits: [Visit]) {
        queue.sync {
            withState { s in
                s.locationTracker.restore(points: points, visits: visits)
                publishLocation(s)
            }
        }
    }

    /// The saved track and visits could not be read at start: STATUS's `gps.restore_error` says why, for the
    /// life of the process (the path this run makes is whole, the earlier one is not in memory).
    public func locationRestoreFailed(_ reason: String) {
        queue.sync {
            withState { s in
                s.locationRestoreError = reason
                publishLocation(s)
            }
        }
    }

    /// Registers the store: told of each point added to the path and each visit as it begins and ends, on
    /// the processing queue (so it must not block).
    public func onLocationRecord(_ recorder: @escaping @Sendable (LocationRecord) -> Void) {
        queue.sync { withState { $0.locationTracker.recorder = recorder } }
    }

    private func publishLocation(_ s: EngineState) {
        var snapshot = s.locationTracker.snapshot
        snapshot.restoreError = s.locationRestoreError
        publishedLocation.withLockedValue { $0 = snapshot }
    }

    /// Logs a change of GPS state once, with the reason when it is a failure; retries stay silent.
    private func logGPSTransition(from before: String, _ tracker: LocationTracker) {
        let after = tracker.state
        guard after != before else { return }
        if after == "unavailable" {
            logger.warning("gps: unavailable: \(tracker.snapshot.error ?? "unknown reason")")
        } else {
            logger.info("gps: \(after)")
        }
    }
}
