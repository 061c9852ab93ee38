import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The zone the daemon's days follow, from $TZ as the C library reads it. Foundation's `TimeZone.current`
/// knows IANA names only: a POSIX TZ string (`GMT+4:25`, `IST-5:30`) or the `:Area/City` form silently became
/// UTC, and "today" started at the wrong hour. Here an IANA name (with or without the leading colon, or as a
/// zoneinfo path) is taken as such, and any other TZ is read by tzset(3): a zone without daylight-saving time
/// becomes its fixed offset, with POSIX's sign (`GMT+4:25` is 4 h 25 min west of Greenwich).
public enum DaemonTimeZone {
    /// The zone, and a warning for the log when TZ could not be followed exactly.
    public struct Resolution: Sendable {
        public var zone: TimeZone
        public var warning: String?
    }

    /// Read once: the daemon's zone does not change while it runs.
    public static let current: Resolution = resolve(ProcessInfo.processInfo.environment["TZ"])

    /// How `tz` (the value of TZ, nil when unset) is followed. Calls tzset(3) with the process's TZ as it is.
    public static func resolve(_ tz: String?) -> Resolution {
        guard let tz, !tz.isEmpty else { return Resolution(zone: .current) }
        var name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
        if let range = name.range(of: "zoneinfo/") { name = String(name[range.upperBound...]) }
        if name.contains("/") || name == "UTC", let zone = TimeZone(identifier: name) {
            return Resolution(zone: zone)
        }
        tzset()
        // A zone whose offset is the same in January and July has no daylight-saving time: its fixed offset.
        func gmtOffset(at instant: time_t) -> Int {
            var instant = instant
            var local = tm()
            localtime_r(&instant, &local)
            return local.tm_gmtoff
        }
        let now = time(nil)
        let year = 365 * 86_400
        let january = now - now % year, july = january + year / 2
        let offset = gmtOffset(at: now)
        if gmtOffset(at: january) == gmtOffset(at: july), let zone = TimeZone(secondsFromGMT: offset) {
            return Resolution(zone: zone)
        }
        // Daylight-saving rules of its own (`CET-1CEST,M3.5.0,M10.5.0/3`): Foundation cannot follow them, so the
        // offset the C library gives now is kept, and the log says so; an IANA name follows the rules.
        let zone = TimeZone(identifier: name) ?? TimeZone(secondsFromGMT: offset) ?? .gmt
        let warning = TimeZone(identifier: name) != nil ? nil : """
            TZ=\(tz) has daylight-saving rules of its own; days follow its offset now (UTC\(offset >= 0 ? "+" : "-")\
            \(String(format: "%02d:%02d", abs(offset) / 3600, abs(offset) % 3600 / 60))) until stepd is restarted. \
            Give an IANA zone (TZ=Europe/Berlin) to follow its changes
            """
        return Resolution(zone: zone, warning: warning)
    }
}
