import Foundation
import StepEngine
import StepProtocol
import StepStore

/// `{"cmd":"status"}`: the daemon's state, its source, store, GPS, broker link and clients (docs/protocol.md).
extension ProtocolServer {
    func status(_ request: Request) -> StatusMessage {
        let s = engine.snapshot
        let gravity = s.motion.map { [Replies.rounded($0.gravity.x, 3), Replies.rounded($0.gravity.y, 3), Replies.rounded($0.gravity.z, 3)] }
        var message = StatusMessage(release: stepdRelease, uptime_s: Replies.rounded(engine.clock.monotonicSeconds - startedAt, 3),
                             source: s.sourceStatus,
                             detector: s.detector, rate_in_hz: Replies.rounded(s.rateInHz, 2), rate_out_hz: s.rateOutHz,
                             samples_in: s.samplesIn, samples_out: s.samplesOut, clients: sessions.count,
                             dropped_watchers: droppedWatchers, gravity: gravity, id: request.id)
        message.closed_clients = closedClients
        message.store = store.map { storeStatus($0.status) }
        message.gps = LocationWire.status(engine.locationSnapshot, now: engine.clock.now)
        message.mqtt = fleet?.status
        message.barometer = s.barometerStatus
        message.steps = engine.stepCountingStatus
        message.relative_altitude_m = s.relativeAltitudeMeters.flatMap { $0.isFinite ? Replies.rounded($0, 2) : nil }
        let zone = DaemonTimeZone.current.zone
        message.time_zone = zone.identifier
        message.utc_offset_s = zone.secondsFromGMT(for: engine.clock.now)
        return message
    }

    private func storeStatus(_ s: StoreStatus) -> StoreStatusMessage {
        StoreStatusMessage(path: s.path, state: s.state, error: s.error, retention_days: s.retentionDays,
                           last_commit: s.lastCommit.map(Timestamp.string))
    }
}
