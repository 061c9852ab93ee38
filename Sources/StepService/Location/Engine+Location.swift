import Foundation
import StepProcessing
import StepProtocol

/// The engine's position side: fixes from the gpsd thread hop onto the processing queue like samples.
extension Engine: FixSink {
    public func receive(fix: Fix) {
        queue.async { [self] in
            let before = locationTracker.state
            let events = locationTracker.receive(fix, steps: steps)
            logGPSTransition(from: before)
            publishLocation()
            if let stretch = locationTracker.takeCompletedStretch() {
                calibrateStride(gpsDistanceMeters: stretch.meters, steps: stretch.steps)
            }
            guard !events.isEmpty else { return }
            let handlers = eventHandlers.withLockedValue { $0 }
            for event in events {
                for handler in handlers { handler(.location(event)) }
            }
        }
    }

    public func gpsConnectionChanged(_ state: GPSConnectionState) {
        queue.async { [self] in
            let before = locationTracker.heardFromSource ? locationTracker.state : "starting"
            locationTracker.connectionChanged(state)
            logGPSTransition(from: before)
            publishLocation()
        }
    }

    /// The latest published position state; cheap, safe from any thread.
    public var locationSnapshot: LocationSnapshot { publishedLocation.withLockedValue { $0 } }

    /// The track document. The path is copied on the processing queue (a copy-on-write array: no work) and
    /// written out on a utility queue: a 10 MB GPX of a day's path takes seconds, and the processing queue
    /// must not stop counting for it.
    public func exportTrack(format: TrackFormat, completion: @escaping @Sendable (TrackMessage) -> Void) {
        queue.async { [self] in
            let track = locationTracker.track
            DispatchQueue.global(qos: .utility).async {
                completion(Self.trackMessage(points: track.points, distanceMeters: track.distanceMeters, format: format))
            }
        }
    }

    /// A track document for `points`; pure, run off the processing queue.
    static func trackMessage(points: [TrackPoint], distanceMeters: Double, format: TrackFormat) -> TrackMessage {
        let document: String
        switch format {
        case .geojson: document = TrackExport.geoJSON(points: points, distanceMeters: distanceMeters, time: Timestamp.string)
        case .gpx: document = TrackExport.gpx(points: points, distanceMeters: distanceMeters, time: Timestamp.string)
        }
        return TrackMessage(format: format.rawValue, distance_m: (distanceMeters * 10).rounded() / 10,
                            points: points.count, start: points.first.map { Timestamp.string($0.time) },
                            end: points.last.map { Timestamp.string($0.time) }, document: document)
    }

    /// The visits kept (restored from the store, then this run's), oldest first, read on the processing queue.
    public func listVisits(completion: @escaping @Sendable ([Visit]) -> Void) {
        queue.async { [self] in completion(locationTracker.allVisits) }
    }

    /// Continues the path and visits saved by an earlier run; called before the GPS source starts.
    public func restoreLocation(points: [Fix], visits: [Visit]) {
        queue.sync {
            locationTracker.restore(points: points, visits: visits)
            publishLocation()
        }
    }

    /// Registers the store: told of each point added to the path and each visit as it begins and ends, on
    /// the processing queue (so it must not block).
    public func onLocationRecord(_ recorder: @escaping @Sendable (LocationRecord) -> Void) {
        queue.sync { locationTracker.recorder = recorder }
    }

    private func publishLocation() {
        dispatchPrecondition(condition: .onQueue(queue))
        let snapshot = locationTracker.snapshot
        publishedLocation.withLockedValue { $0 = snapshot }
    }

    /// Logs a change of GPS state once, with the reason when it is a failure; retries stay silent.
    private func logGPSTransition(from before: String) {
        let after = locationTracker.state
        guard after != before else { return }
        if after == "unavailable" {
            logger.warning("gps: unavailable: \(locationTracker.snapshot.error ?? "unknown reason")")
        } else {
            logger.info("gps: \(after)")
        }
    }
}
