import Foundation
import StepProcessing
import StepProtocol
import Timekeeping

/// The engine's position side: fixes from the gpsd thread hop onto the processing queue like samples.
extension Engine: FixSink {
    public func receive(fix: Fix) {
        queue.async { [self] in
            withState { s in
                let before = s.locationTracker.state
                let events = s.locationTracker.receive(fix, steps: s.steps)
                logGPSTransition(from: before, &s)
                publishLocation(s)
                if let stretch = s.locationTracker.takeCompletedStretch() {
                    calibrateStride(gpsDistanceMeters: stretch.meters, steps: stretch.steps)
                }
                guard !events.isEmpty else { return }
                for event in events { emit(.location(event)) }
            }
        }
    }

    public func gpsConnectionChanged(_ state: GPSConnectionState) {
        queue.async { [self] in
            withState { s in
                let before = s.locationTracker.heardFromSource ? s.locationTracker.state : "starting"
                s.locationTracker.connectionChanged(state)
                switch state {
                case .connected: s.gpsUnavailableSince = nil
                case .unavailable: s.gpsUnavailableSince = s.gpsUnavailableSince ?? clock.now
                }
                logGPSTransition(from: before, &s)
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

    private func publishLocation(_ s: EngineState) {
        var snapshot = s.locationTracker.snapshot
        snapshot.restoreError = s.locationRestoreError
        snapshot.unavailableSince = s.gpsUnavailableSince
        publishedLocation.withLockedValue { $0 = snapshot }
    }

    /// Logs a change of GPS state once, with the reason when it is a failure; retries stay silent. A fix
    /// (re)arms the deadline that says `stale` when the receiver goes quiet behind gpsd, which no report tells.
    private func logGPSTransition(from before: String, _ s: inout EngineState) {
        let tracker = s.locationTracker
        let after = tracker.state
        if after == GPSState.fix.rawValue {
            gpsStaleDeadline(&s).schedule(after: GPSState.staleAfterSeconds + 0.1)
        } else {
            s.gpsStaleDeadline?.clear()
        }
        guard after != (s.gpsLoggedState ?? before) else { return }
        s.gpsLoggedState = after
        switch after {
        case GPSState.unavailable.rawValue:
            logger.warning("gps: unavailable: \(tracker.snapshot.error ?? "unknown reason")")
        case GPSState.noFix.rawValue:
            logger.info("gps: no_fix (gpsd is connected; the receiver reports no position yet)")
        default:
            logger.info("gps: \(after)")
        }
    }

    private func gpsStaleDeadline(_ s: inout EngineState) -> any ClockTimer {
        if let deadline = s.gpsStaleDeadline { return deadline }
        let deadline = clock.makeQuietDeadline(queue: queue) { [weak self] in self?.gpsFixMayBeStale() }
        s.gpsStaleDeadline = deadline
        return deadline
    }

    /// No fix for `staleAfterSeconds`: STATUS says `stale` (GPSState's rule, at the same age), and the journal
    /// says it once, as docs/gps.md promises; the next fix logs `gps: fix` again.
    private func gpsFixMayBeStale() {
        withState { s in
            let snapshot = s.locationTracker.snapshot
            guard snapshot.state(now: clock.now) == .stale, s.gpsLoggedState != GPSState.stale.rawValue else {
                // Moved just as it expired (a fix came): the next fix set it again.
                if let arrival = snapshot.position?.arrival, snapshot.state == GPSState.fix.rawValue,
                   s.gpsLoggedState != GPSState.stale.rawValue {
                    let left = GPSState.staleAfterSeconds - clock.now.timeIntervalSince(arrival)
                    if left > 0 { gpsStaleDeadline(&s).schedule(after: left + 0.1) }
                }
                return
            }
            s.gpsLoggedState = GPSState.stale.rawValue
            let seconds = Int(GPSState.staleAfterSeconds)
            logger.warning("gps: stale: no new fix for \(seconds) s though gpsd is connected (the receiver went quiet: unplugged behind gpsd, powered down, or no longer sending)")
        }
    }
}
