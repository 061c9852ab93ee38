import Foundation

/// A time zone as days, hours and local times need it: the offset from UTC at each instant, and a name. The
/// boundaries are drawn here from the offsets alone, so the daemon's zone can be the C library's (localtime_r:
/// DaemonTimeZone), which follows TZ exactly as `date` does, and Foundation's TimeZone and Calendar, whose every
/// zone is ICU's on Linux (1.5 MB of ICU's code and data resident in a process that uses them), stay out of
/// the daemon's run. A Foundation TimeZone can stand behind one too (tests, clients).
public struct LocalZone: Sendable, Equatable, CustomStringConvertible {
    /// The name STATUS and HISTORY give: an IANA name, `GMT+0530`, or a POSIX TZ string.
    public let identifier: String
    private let offsetAt: @Sendable (_ unixSeconds: Int) -> Int
    /// Set for a fixed offset, so that two of them compare without calling `offsetAt`.
    private let fixedOffset: Int?

    /// A zone whose offset at each whole Unix second is `offsetSeconds` (seconds east of Greenwich).
    public init(identifier: String, offsetSeconds: @escaping @Sendable (_ unixSeconds: Int) -> Int) {
        self.identifier = identifier
        offsetAt = offsetSeconds
        fixedOffset = nil
    }

    private init(identifier: String, fixed seconds: Int) {
        self.identifier = identifier
        offsetAt = { _ in seconds }
        fixedOffset = seconds
    }

    /// A zone that is always `seconds` east of Greenwich, named `GMT+0530` unless given a name.
    public static func fixed(secondsFromGMT seconds: Int, identifier: String? = nil) -> LocalZone {
        let sign = seconds < 0 ? "-" : "+"
        let name = identifier ?? (seconds == 0 ? "GMT"
            : "GMT\(sign)\(twoDigits(abs(seconds) / 3600))\(twoDigits(abs(seconds) % 3600 / 60))")
        return LocalZone(identifier: name, fixed: seconds)
    }

    public static let utc = LocalZone.fixed(secondsFromGMT: 0, identifier: "UTC")

    /// The zone Foundation draws for `timeZone` (its rules, its name).
    public init(_ timeZone: TimeZone) {
        self.init(identifier: timeZone.identifier) { timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double($0))) }
    }

    public var description: String { identifier }

    /// Seconds east of Greenwich at `date`.
    public func secondsFromGMT(for date: Date) -> Int { offset(Self.second(date)) }

    /// The same name and, for fixed offsets, the same offset: zones are told apart by name, as TimeZone's are.
    public static func == (a: LocalZone, b: LocalZone) -> Bool {
        a.identifier == b.identifier && a.fixedOffset == b.fixedOffset
    }

    public enum Unit: Sendable {
        case minute, hour, day

        var seconds: Int {
            switch self {
            case .minute: return 60
            case .hour: return 3_600
            case .day: return 86_400
            }
        }
    }

    /// The local minute, hour or day that holds `date`, [start, end). Where the clocks change, a day has 23 or
    /// 25 hours, a day whose midnight is skipped starts at the change, and an hour or minute also ends where the
    /// offset changes (so the hour repeated in autumn is two hours, each with its own offset), as Calendar draws
    /// them.
    public func interval(of unit: Unit, containing date: Date) -> DateInterval {
        let t = Self.second(date)
        let k = key(t, unit)
        let span = unit.seconds + 2 * 86_400  // the longest a unit lasts, with a skipped day, and more
        // Where no change is near: the boundaries the offset at `t` gives. Checked, not assumed.
        let offsetNow = offset(t)
        let guessStart = Self.floorDivide(t + offsetNow, unit.seconds) * unit.seconds - offsetNow
        let start: Int
        if guessStart <= t, key(guessStart, unit) == k, key(guessStart - 1, unit) != k {
            start = guessStart
        } else {
            start = boundary(from: t - span, to: t) { key($0, unit) == k }
        }
        let guessEnd = guessStart + unit.seconds
        let end: Int
        if guessEnd > t, key(guessEnd, unit) != k, key(guessEnd - 1, unit) == k {
            end = guessEnd
        } else {
            end = boundary(from: t, to: t + span) { key($0, unit) != k }
        }
        return DateInterval(start: Date(timeIntervalSince1970: Double(start)), end: Date(timeIntervalSince1970: Double(end)))
    }

    /// Local midnight, or the first instant of the day where midnight is skipped.
    public func startOfDay(for date: Date) -> Date { interval(of: .day, containing: date).start }

    // MARK: Arithmetic

    private func offset(_ second: Int) -> Int { fixedOffset ?? offsetAt(second) }

    /// Which local unit an instant falls in: its local day, or its local hour or minute and the offset (an
    /// offset change ends an hour or a minute, as the hour repeated in autumn is not one three-hour bin).
    private struct Key: Equatable {
        var local: Int
        var offset: Int
    }

    private func key(_ second: Int, _ unit: Unit) -> Key {
        let offset = offset(second)
        let local = Self.floorDivide(second + offset, unit.seconds)
        return Key(local: local, offset: unit == .day ? 0 : offset)
    }

    /// The first second in (low, high] where `isAfter` holds, given that it does not hold at `low`, holds at
    /// `high`, and changes once in between. Where it does not hold at `high` either, `high`.
    private func boundary(from low: Int, to high: Int, _ isAfter: (Int) -> Bool) -> Int {
        var (low, high) = (low, high)
        guard isAfter(high), !isAfter(low) else { return high }
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if isAfter(middle) { high = middle } else { low = middle }
        }
        return high
    }

    private static func second(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }

    private static func floorDivide(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private static func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
