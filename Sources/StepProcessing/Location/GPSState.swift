import Foundation

/// The GPS state STATUS reports, decided in this one place: `stepctl status` prints it and the dashboard
/// shows it as STATUS gives it, so the three never disagree.
public enum GPSState: String, Sendable, CaseIterable {
    /// gpsd cannot be reached (or GPS is switched off with --no-gps; `error` says which).
    case unavailable
    /// gpsd is connected but no current fix: the receiver has not reported one since connecting, or its last
    /// report carried no position.
    case noFix = "no_fix"
    /// A fix younger than `staleAfterSeconds`.
    case fix
    /// gpsd is connected, the receiver's last report had a position, but nothing newer came for
    /// `staleAfterSeconds`: the receiver went quiet (unplugged behind gpsd, powered down, a stalled USB link).
    case stale

    /// Ten epochs of a 1 Hz receiver, the slowest rate consumer receivers report at: a fix older than this
    /// is no longer where the user is. The dashboard used the same 10 s; it now reads the state from STATUS.
    public static let staleAfterSeconds = 10.0

    /// The rule. `lastFixAgeSeconds` is how long ago the last accepted fix reached the daemon (daemon clock).
    public static func judge(connected: Bool, fixSinceConnecting: Bool, lastReportHadPosition: Bool,
                             lastFixAgeSeconds: Double?) -> GPSState {
        guard connected else { return .unavailable }
        guard fixSinceConnecting, lastReportHadPosition, let age = lastFixAgeSeconds else { return .noFix }
        return age > staleAfterSeconds ? .stale : .fix
    }
}
