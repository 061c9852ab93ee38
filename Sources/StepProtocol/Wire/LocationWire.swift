import Foundation
import StepProcessing

/// Turns position values into wire messages.
public enum LocationWire {
    public static func position(_ fix: Fix?, now: Date, id: JSONValue? = nil) -> PositionMessage {
        guard let fix else { return PositionMessage(mode: FixMode.noFix.rawValue, id: id) }
        return PositionMessage(time: fix.time.map(Timestamp.string), lat: fix.latitudeDegrees, lon: fix.longitudeDegrees,
                               alt_msl_m: fix.altitudeMSLMeters, alt_hae_m: fix.altitudeHAEMeters,
                               eph_m: fix.ephMeters, epv_m: fix.epvMeters, speed_mps: fix.speedMetersPerSecond,
                               track_deg: fix.trackDegrees, climb_mps: fix.climbMetersPerSecond,
                               mode: fix.mode.rawValue, satellites_used: fix.satellitesUsed,
                               age_s: Replies.rounded(max(0, now.timeIntervalSince(fix.arrival)), 2), accuracy: fix.accuracy.rawValue, id: id)
    }

    public static func visit(_ v: Visit) -> VisitMessage {
        VisitMessage(arrival: Timestamp.string(v.arrival), departure: v.departure.map(Timestamp.string),
                     lat: v.center.latitudeDegrees, lon: v.center.longitudeDegrees, radius_m: Replies.rounded(v.radiusMeters, 1),
                     duration_s: v.departure.map { $0.timeIntervalSince(v.arrival) }, fixes: v.fixCount)
    }

    public static func status(_ s: LocationSnapshot, now: Date) -> GPSStatus {
        GPSStatus(state: s.state(now: now).rawValue, error: s.error, gpsd: s.gpsd, fixes_accepted: s.fixesAccepted,
                  fixes_ignored: s.fixesIgnored, fixes_rejected: s.fixesRejected, connections: s.connections,
                  last_fix_age_s: s.position.map { Replies.rounded(max(0, now.timeIntervalSince($0.arrival)), 1) },
                  restore_error: s.restoreError, fixes_over_max_eph: s.fixesOverMaximumEph, track_max_eph_m: s.maximumEphMeters)
    }
}
