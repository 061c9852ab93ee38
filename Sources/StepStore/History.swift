import Foundation
import StepProcessing

/// How long a history bin is. Day bins follow the local calendar (a day of 23 or 25 hours when the clocks
/// change); hour bins are local hours too, which matters where the offset is not whole hours.
public enum HistoryBinSize: String, CaseIterable, Sendable {
    case minute, hour, day

    /// The longest range one request may cover, so that a reply stays a reasonable line and a quick answer
    /// (7 days of minutes is at most 10 080 bins, a quarter of hours 2 208, ten years of days 3 660 indexed
    /// sums). Without a bound, day bins from year 0 to 9999 would take 14 s and 57 MB and hold SIGTERM back.
    public var maximumDays: Int {
        switch self {
        case .minute: return 7
        case .hour: return 92
        case .day: return 3660
        }
    }
}

/// Steps, distance and floors over one bin. `floors` is nil when no floor source reported in it.
public struct HistoryBin: Sendable, Equatable {
    public var start: Date
    public var end: Date
    public var steps: Int
    public var distanceMeters: Double
    public var floors: Int?

    public init(start: Date, end: Date, steps: Int, distanceMeters: Double, floors: Int?) {
        self.start = start
        self.end = end
        self.steps = steps
        self.distanceMeters = distanceMeters
        self.floors = floors
    }
}

/// Where history bins begin and end. Pure: the calendar (and so the time zone) comes in as a value.
enum HistoryBinning {
    /// The minute numbers (Unix minutes) that overlap [from, to): the minute `from` falls in counts whole,
    /// so "since 10:30:20" includes the 10:30 minute.
    static func minuteRange(from: Date, to: Date) -> Range<Int64> {
        let lower = Int64((from.timeIntervalSince1970 / 60).rounded(.down))
        let upper = Int64((to.timeIntervalSince1970 / 60).rounded(.up))
        return lower..<max(lower, upper)
    }

    static func minute(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 60).rounded(.down)) }

    static func validate(from: Date, to: Date, size: HistoryBinSize) throws {
        guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
        if to.timeIntervalSince(from) > Double(size.maximumDays) * 86_400 {
            throw StoreError.rangeTooLong(bin: size, maximumDays: size.maximumDays)
        }
    }

    /// The local hours or days that overlap [from, to), in order. Every zone in use is offset from UTC by
    /// whole minutes, so each boundary is a whole minute.
    static func intervals(from: Date, to: Date, size: HistoryBinSize, zone: LocalZone) -> [DateInterval] {
        let unit: LocalZone.Unit = size == .day ? .day : size == .hour ? .hour : .minute
        var intervals: [DateInterval] = []
        var cursor = from
        while cursor < to {
            let interval = zone.interval(of: unit, containing: cursor)
            intervals.append(interval)
            // A clock change can make an hour's end equal the next's start twice; step past it either way.
            cursor = interval.end > cursor ? interval.end : cursor.addingTimeInterval(60)
        }
        return intervals
    }
}
