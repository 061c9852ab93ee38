import Foundation
import StepProcessing

/// How `stepd analyze` writes times and days: on the recording's own clock (seconds, days counted from its
/// zero), or as local wall-clock times when the recording's start is known (`--start`, or a `t` in Unix time).
struct AnalysisClock: Sendable {
    /// Added to the recording's `t` to give Unix time; nil on the recording's own clock.
    let unixOffsetSeconds: Double?
    let timeZone: TimeZone

    /// A `t` at or past this is taken for Unix time (2001-09-09): no recording runs for 31 years from zero.
    static let unixTimeThreshold = 1e9

    init(unixOffsetSeconds: Double?, timeZone: TimeZone = .current) {
        self.unixOffsetSeconds = unixOffsetSeconds
        self.timeZone = timeZone
    }

    var isAbsolute: Bool { unixOffsetSeconds != nil }

    /// The offset from the recording's clock to the analysis clock (Unix time, or the recording's own).
    var analysisOffsetSeconds: Double { unixOffsetSeconds ?? 0 }

    /// Days for ActivityAnalysis: local calendar days as yyyymmdd when absolute; else 86,400 s from zero.
    var dayOf: @Sendable (Double) -> Int {
        guard isAbsolute else { return { Int(flooringClamped: $0 / 86_400) } }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return { [calendar] t in
            let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: t))
            return (c.year ?? 0) * 10_000 + (c.month ?? 0) * 100 + (c.day ?? 0)
        }
    }

    /// A day key as written: "2026-11-20", or the day of the recording counted from 1.
    func dayLabel(_ day: Int) -> String {
        guard isAbsolute else { return String(day + 1) }
        return String(format: "%04d-%02d-%02d", day / 10_000, day / 100 % 100, day % 100)
    }

    /// Writes instants on the analysis clock: ISO-8601 with the local offset, or seconds. One per recording:
    /// its formatters are made once, not once a row.
    func makeTimeLabeler() -> TimeLabeler { TimeLabeler(clock: self) }

    /// The zone `--start` was written in ("+01:00", "Z"), so that times and days come out as the user wrote them.
    static func startTimeZone(_ text: String) -> TimeZone? {
        if text.hasSuffix("Z") || text.hasSuffix("z") { return TimeZone(secondsFromGMT: 0) }
        let tail = text.suffix(6)
        guard tail.count == 6, let sign = tail.first, sign == "+" || sign == "-",
              let hours = Int(tail.dropFirst().prefix(2)), let minutes = Int(tail.suffix(2)) else { return nil }
        return TimeZone(secondsFromGMT: (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60))
    }

    /// Parses `--start`: ISO-8601 with a date, a time and an offset or Z, seconds fractional or not.
    static func parseStart(_ text: String) -> Double? {
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        }
        return nil
    }
}

final class TimeLabeler {
    private let absolute: Bool
    private let whole = ISO8601DateFormatter()
    private let fractional = ISO8601DateFormatter()

    init(clock: AnalysisClock) {
        absolute = clock.isAbsolute
        whole.timeZone = clock.timeZone
        whole.formatOptions = [.withInternetDateTime]
        fractional.timeZone = clock.timeZone
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    }

    func label(_ t: Double, fractional isFractional: Bool = false) -> String {
        guard absolute else { return isFractional ? String(format: "%.3f", t) : String(format: "%.0f", t) }
        return (isFractional ? fractional : whole).string(from: Date(timeIntervalSince1970: t))
    }
}
