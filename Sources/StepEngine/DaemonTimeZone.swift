import Foundation
import StepProcessing
#if canImport(Glibc)
import Glibc
#endif

/// The zone the daemon's days follow: the C library's, from $TZ, else /etc/localtime, read as `date` reads them
/// (localtime_r). Any TZ the C library takes is followed exactly: an IANA name (with or without the leading
/// colon, or as a zoneinfo path), a POSIX string of a fixed offset (`GMT+4:25` is 4 h 25 min west of Greenwich)
/// or one with daylight-saving rules of its own (`CET-1CEST,M3.5.0,M10.5.0/3`). Foundation's TimeZone is not
/// used: on Linux every one is ICU's, which knows IANA names only, and it would bring ICU into the daemon's run
/// (LocalZone).
public enum DaemonTimeZone {
    /// The zone, a warning for the log when TZ is one the C library cannot read (it then keeps UTC), and a
    /// notice of how it is followed when that is not plain.
    public struct Resolution: Sendable {
        public var zone: LocalZone
        public var warning: String?
        public var notice: String?

        init(zone: LocalZone, warning: String? = nil, notice: String? = nil) {
            self.zone = zone
            self.warning = warning
            self.notice = notice
        }
    }

    /// Read once: the daemon's zone does not change while it runs.
    public static let current: Resolution = resolve(ProcessInfo.processInfo.environment["TZ"])

    /// Where the C library finds zones by name.
    static let zoneinfo = "/usr/share/zoneinfo/"

    /// How `tz` (the value of TZ, nil when unset) is followed. Calls tzset(3) with the process's TZ as it is.
    public static func resolve(_ tz: String?) -> Resolution {
        tzset()
        let cLibrary: @Sendable (Int) -> Int = { cOffset(at: $0) }
        guard let tz, !tz.isEmpty else { return Resolution(zone: LocalZone(identifier: systemZoneName(), offsetSeconds: cLibrary)) }
        var name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
        if let range = name.range(of: "zoneinfo/") { name = String(name[range.upperBound...]) }
        if name == "UTC" || isZoneFile(name) { return Resolution(zone: LocalZone(identifier: name, offsetSeconds: cLibrary)) }
        // A POSIX string needs an offset; without one the C library keeps UTC.
        guard tz.contains(where: \.isNumber) else {
            return Resolution(zone: .utc, warning: "TZ=\(tz) is neither a zone of \(zoneinfo) nor a POSIX TZ string; "
                              + "days follow UTC, as the C library does. Give an IANA zone (TZ=Europe/Berlin)")
        }
        // A POSIX string's rules are the same every year: no change in one year is a fixed offset, named as GMT+0530.
        let year = cLibraryOffsets(from: referenceYear, days: 366)
        if year.count == 1 { return Resolution(zone: .fixed(secondsFromGMT: year[0].offset)) }
        return Resolution(zone: LocalZone(identifier: tz, offsetSeconds: cLibrary),
                          notice: "TZ=\(tz): days follow its own daylight-saving rules, as the C library reads them")
    }

    /// The zone /etc/localtime names (its link into zoneinfo, else Debian's /etc/timezone); UTC without one.
    static func systemZoneName() -> String {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/etc/localtime"),
           let range = target.range(of: "zoneinfo/") {
            return String(target[range.upperBound...])
        }
        if let text = try? String(contentsOfFile: "/etc/timezone", encoding: .utf8) {
            let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !name.isEmpty { return name }
        }
        return FileManager.default.fileExists(atPath: "/etc/localtime") ? "localtime" : "UTC"
    }

    /// Whether `name` is a zone file the C library would read (`Europe/Berlin`, `UTC`), not a path outside.
    static func isZoneFile(_ name: String) -> Bool {
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("..") else { return false }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: zoneinfo + name, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    /// 2026-01-01T00:00:00Z: any year serves to tell a POSIX string's fixed offset from its rules.
    static let referenceYear = 1_767_225_600

    /// The offset the C library gives at `instant` for the process's TZ (after tzset).
    private static func cOffset(at instant: Int) -> Int {
        var instant = time_t(instant)
        var local = tm()
        localtime_r(&instant, &local)
        return local.tm_gmtoff
    }

    /// The C library's offset at `start` and on both sides of each change in the `days` after it (found day by
    /// day, then to the second).
    static func cLibraryOffsets(from start: Int, days: Int) -> [(instant: Int, offset: Int)] {
        let end = start + days * 86_400
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
}
