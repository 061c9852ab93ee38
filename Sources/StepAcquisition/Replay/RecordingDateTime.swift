import Foundation

/// A time written as a date-time, as stepcount's and actipy's CSV files write it (`2014-05-07 13:29:50.439`,
/// `2014-05-07T13:29:50.439+01:00`): `YYYY-MM-DD`, `T` or a space, `hh:mm:ss`, an optional fraction of any
/// length, an optional `Z`, `±hh`, `±hhmm` or `±hh:mm`. Read as Unix seconds; one without an offset is a
/// wall-clock time in the local zone (`LocalWallClock`), as `stepd analyze` writes times back.
enum RecordingDateTime {
    /// The seconds since 1970-01-01T00:00:00 on the wall clock written (as if it were UTC), and the offset
    /// when one is written; nil (cursor unmoved) when the text at `cursor` is not such a date-time.
    static func parse(_ cursor: inout UnsafeMutablePointer<CChar>) -> (wallSeconds: Double, offsetSeconds: Int?)? {
        var p = cursor
        // Exactly `count` digits, or nil with `p` where it was.
        func digits(_ count: Int) -> Int? {
            var value = 0
            for k in 0..<count {
                let d = UInt8(bitPattern: p[k]) &- 48
                guard d < 10 else { return nil }
                value = value * 10 + Int(d)
            }
            p += count
            return value
        }
        func skip(_ character: UInt8) -> Bool {
            guard UInt8(bitPattern: p.pointee) == character else { return false }
            p += 1
            return true
        }
        guard let year = digits(4), skip(0x2D), let month = digits(2), skip(0x2D), let day = digits(2),
              skip(0x54) || skip(0x20),   // 'T' or ' '
              let hour = digits(2), skip(0x3A), let minute = digits(2), skip(0x3A), let second = digits(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second <= 60 else { return nil }
        var fraction = 0.0
        if skip(0x2E) {   // '.'
            var scale = 0.1
            while true {
                let d = UInt8(bitPattern: p.pointee) &- 48
                guard d < 10 else { break }
                fraction += Double(d) * scale
                scale /= 10
                p += 1
            }
        }
        var offset: Int?
        if skip(0x5A) {   // 'Z'
            offset = 0
        } else if p.pointee == 0x2B || p.pointee == 0x2D {   // '+', '-'
            let sign = p.pointee == 0x2D ? -1 : 1
            p += 1
            guard let hours = digits(2), hours < 24 else { return nil }
            var minutes = 0
            let colon = skip(0x3A)
            if let m = digits(2) { minutes = m } else if colon { return nil }
            guard minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        let days = daysSince1970(year: year, month: month, day: day)
        let whole = days * 86_400 + hour * 3600 + minute * 60 + second
        cursor = p
        return (Double(whole) + fraction, offset)
    }

    /// Days from 1970-01-01 to the date in the proleptic Gregorian calendar (H. Hinnant, "chrono-compatible
    /// low-level date algorithms", days_from_civil).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// Turns wall-clock times without an offset into Unix seconds in one zone (the local one, TZ), asking the
/// zone once per hour of the recording rather than once per row.
struct LocalWallClock {
    let zone: TimeZone
    private var cachedHour = Int.min
    private var cachedOffsetSeconds = 0

    init(zone: TimeZone) { self.zone = zone }

    mutating func unixSeconds(wallSeconds: Double) -> Double {
        let hour = Int((wallSeconds / 3600).rounded(.down))
        if hour != cachedHour {
            // The zone's offset at the guess taken as UTC, then again at the instant that guess gives: right
            // but within the hour a clock change repeats or skips.
            let wall = Double(hour) * 3600
            let guess = zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall))
            cachedOffsetSeconds = zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - Double(guess)))
            cachedHour = hour
        }
        return wallSeconds - Double(cachedOffsetSeconds)
    }
}
