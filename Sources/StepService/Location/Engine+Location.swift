import Foundation
import StepAcquisition
import StepProcessing
import StepProtocol

/// The engine's position side: fixes from the gpsd thread hop onto the processing queue like samples.
extension Engine: FixSink {
    public func receive(fix: Fix) {
        queue.async { [self] in
            let before = locationTracker.state
            let events = locationTracker.receive(fix, steps: snapshot.steps)
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

    /// Builds the track document on the processing queue (the path is not copied into every snapshot).
    public func exportTrack(format: TrackFormat, completion: @escaping @Sendable (TrackMessage) -> Void) {
        queue.async { [self] in
            let track = locationTracker.track
            let document: String
            switch format {
            case .geojson: document = TrackExport.geoJSON(points: track.points, distanceMeters: track.distanceMeters)
            case .gpx: document = TrackExport.gpx(points: track.points, distanceMeters: track.distanceMeters)
            }
            completion(TrackMessage(format: format.rawValue, distance_m: track.distanceMeters,
                                    points: track.points.count, start: track.points.first.map { Timestamp.string($0.time) },
                                    end: track.points.last.map { Timestamp.string($0.time) }, document: document))
        }
    }

    /// The visits kept so far, oldest first, read on the processing queue.
    public func listVisits(completion: @escaping @Sendable ([Visit]) -> Void) {
        queue.async { [self] in completion(locationTracker.visits.visits) }
    }

    private func publishLocation() {
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
