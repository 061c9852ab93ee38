import Foundation
import StepProcessing

/// ISO-8601 times as the protocol writes them: milliseconds, UTC with "Z" as in gpsd's TPV, or a zone's offset.
///
/// Written out by hand rather than with ISO8601DateFormatter: the daemon formats a time for every event, and
/// on Linux each formatter drags in ICU, costing memory and, with a custom zone, leaking a little per use.
public enum Timestamp {
    /// "2026-11-22T20:26:03.466Z"
    public static func string(_ date: Date) -> String {
        format(date, offsetSeconds: 0)
    }

    /// "2026-03-29T00:00:00.000+01:00", with the zone's offset at that instant.
    public static func string(_ date: Date, in timeZone: TimeZone) -> String {
        format(date, offsetSeconds: timeZone.secondsFromGMT(for: date))
    }

    /// The calendar day of `date` in the zone, "2026-03-29".
    public static func day(_ date: Date, in timeZone: TimeZone) -> String {
        String(format(date, offsetSeconds: timeZone.secondsFromGMT(for: date)).prefix(10))
    }

    /// "2026-03-29T00:00:00.000+01:00", with the zone's offset at that instant.
    public static func string(_ date: Date, in zone: LocalZone) -> String {
        format(date, offsetSeconds: zone.secondsFromGMT(for: date))
    }

    /// The calendar day of `date` in the zone, "2026-03-29".
    public static func day(_ date: Date, in zone: LocalZone) -> String {
        String(format(date, offsetSeconds: zone.secondsFromGMT(for: date)).prefix(10))
    }

    /// Parses "YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM|±HHMM]"; nil for anything else.
    public static func date(_ text: String) -> Date? {
        let c = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= c.count else { return nil }
            var n = 0
            for i in from..<(from + count) {
                guard c[i] >= 48, c[i] <= 57 else { return nil }
                n = n * 10 + Int(c[i] - 48)
            }
            return n
        }
        guard c.count >= 20, c[4] == 45, c[7] == 45, c[10] == 84 || c[10] == 116 || c[10] == 32,
              c[13] == 58, c[16] == 58,
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if i < c.count, c[i] == 46 {
            i += 1
            var scale = 0.1
            let start = i
            while i < c.count, c[i] >= 48, c[i] <= 57 {
                fraction += Double(c[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        guard i < c.count else { return nil }
        if c[i] == 90 || c[i] == 122 {
            i += 1
        } else if c[i] == 43 || c[i] == 45 {
            let sign = c[i] == 45 ? -1 : 1
            guard let h = number(i + 1, 2) else { return nil }
            var m: Int?
            if i + 3 < c.count, c[i + 3] == 58 { m = number(i + 4, 2); i += 6 } else { m = number(i + 3, 2); i += 5 }
            guard let minutes = m, h < 24, minutes < 60 else { return nil }
            offset = sign * (h * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard i == c.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Double(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    /// Times written: years 0001 to 9999, the range of the format. A time outside (a corrupt stored time, 1e300 s)
    /// is written as the nearest end, and NaN as the epoch, rather than trapping in the conversion to Int64.
    static let formattedSeconds = -62_135_596_800.0...253_402_300_799.999

    private static func format(_ date: Date, offsetSeconds: Int) -> String {
        let t = date.timeIntervalSince1970
        let seconds = t.isNaN ? 0 : min(max(t, formattedSeconds.lowerBound), formattedSeconds.upperBound)
        let offset = Int64(max(-86_400, min(86_400, offsetSeconds)))
        let totalMilliseconds = Int64((seconds * 1000).rounded(.down)) + offset * 1000
        let (secondsOfEpoch, milliseconds) = floorDivision(totalMilliseconds, 1000)
        let (days, secondOfDay) = floorDivision(secondsOfEpoch, 86400)
        let (year, month, day) = civilFromDays(Int(days))
        var out = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        out += pad(Int(secondOfDay / 3600), 2) + ":" + pad(Int(secondOfDay / 60 % 60), 2) + ":" + pad(Int(secondOfDay % 60), 2)
        out += "." + pad(Int(milliseconds), 3)
        if offsetSeconds == 0 { return out + "Z" }
        let magnitude = abs(offsetSeconds)
        return out + (offsetSeconds < 0 ? "-" : "+") + pad(magnitude / 3600, 2) + ":" + pad(magnitude / 60 % 60, 2)
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-Compatible Low-Level Date
    /// Algorithms").
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z: Int) -> (year: Int, month: Int, day: Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
