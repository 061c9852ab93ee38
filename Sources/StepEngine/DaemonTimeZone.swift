import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The zone the daemon's days follow, from $TZ as the C library reads it. Foundation's `TimeZone.current`
/// knows IANA names only: a POSIX TZ string (`GMT+4:25`, `IST-5:30`) or the `:Area/City` form silently became
/// UTC, and "today" started at the wrong hour. Here an IANA name (with or without the leading colon, or as a
/// zoneinfo path) is taken as such, and any other TZ is read by tzset(3): a zone without daylight-saving time
/// becomes its fixed offset, with POSIX's sign (`GMT+4:25` is 4 h 25 min west of Greenwich), and one with
/// daylight-saving rules of its own becomes the IANA zone whose changes are the C library's (localtime_r).
public enum DaemonTimeZone {
    /// The zone, a warning for the log when TZ could not be followed exactly, and a notice of how it is followed
    /// when that is not plain.
    public struct Resolution: Sendable {
        public var zone: TimeZone
        public var warning: String?
        public var notice: String?

        init(zone: TimeZone, warning: String? = nil, notice: String? = nil) {
            self.zone = zone
            self.warning = warning
            self.notice = notice
        }
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
        let now = Int(time(nil))
        let offset = cOffset(at: now)
        let checks = cLibraryOffsets(around: now)
        // No change in the years around now: no daylight-saving time, its fixed offset.
        if checks.count == 1, let zone = TimeZone(secondsFromGMT: offset) { return Resolution(zone: zone) }
        // Daylight-saving rules of its own (`CET-1CEST,M3.5.0,M10.5.0/3`): Foundation cannot read them, so the
        // zone is the IANA zone whose offsets are the C library's at every change over the years around now.
        if let zone = TimeZone(identifier: name) { return Resolution(zone: zone) }
        if let zone = zone(with: checks) {
            return Resolution(zone: zone, notice: "TZ=\(tz) follows the C library's rules: its changes are those of "
                              + "\(zone.identifier) over the years around now, which days and STATUS follow")
        }
        // Rules no zone shares: the offset the C library gives now, and the log says so.
        let zone = TimeZone(secondsFromGMT: offset) ?? .gmt
        let warning = """
            TZ=\(tz) has daylight-saving rules no known zone shares; days follow its offset now (UTC\(offset >= 0 ? "+" : "-")\
            \(String(format: "%02d:%02d", abs(offset) / 3600, abs(offset) % 3600 / 60))) until stepd is restarted. \
            Give an IANA zone (TZ=Europe/Berlin) to follow its changes
            """
        return Resolution(zone: zone, warning: warning)
    }

    /// How many years either side of now the C library's offsets are compared with a zone's.
    static let matchedYears = 3

    /// The offset the C library gives at `instant` for the process's TZ (after tzset).
    private static func cOffset(at instant: Int) -> Int {
        var instant = time_t(instant)
        var local = tm()
        localtime_r(&instant, &local)
        return local.tm_gmtoff
    }

    /// The C library's offset at the start of the years around now and on both sides of each change in them
    /// (found day by day, then to the second).
    static func cLibraryOffsets(around now: Int) -> [(instant: Int, offset: Int)] {
        let year = 365 * 86_400
        let start = now - matchedYears * year, end = now + matchedYears * year
        var checks = [(instant: start, offset: cOffset(at: start))]
        var day = start
        while day < end {
            let next = day + 86_400
            if cOffset(at: next) != cOffset(at: day) {
                var (low, high) = (day, next)  // the change is in (low, high]
                while high - low > 1 {
                    let middle = (low + high) / 2
                    if cOffset(at: middle) == cOffset(at: day) { low = middle } else { high = middle }
                }
                checks.append((low, cOffset(at: low)))
                checks.append((high, cOffset(at: high)))
            }
            day = next
        }
        return checks
    }

    /// The IANA zone with all these offsets. Europe's and America's zones are tried first, so that the name
    /// STATUS gives is a familiar one when several zones share the rules.
    static func zone(with checks: [(instant: Int, offset: Int)]) -> TimeZone? {
        let preferred = ["Europe/", "America/", "Australia/", "Asia/", "Pacific/", "Africa/"]
        let rank = { (name: String) in preferred.firstIndex { name.hasPrefix($0) } ?? preferred.count }
        let candidates = TimeZone.knownTimeZoneIdentifiers.sorted { (rank($0), $0) < (rank($1), $1) }
        return candidates.lazy.compactMap(TimeZone.init(identifier:)).first { zone in
            checks.allSatisfy { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double($0.instant))) == $0.offset }
        }
    }
}
