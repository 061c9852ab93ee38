import Foundation

/// How long a history bin is. Day bins follow the local calendar (a day of 23 or 25 hours when the clocks
/// change); hour bins are local hours too, which matters where the offset is not whole hours.
public enum HistoryBinSize: String, CaseIterable, Sendable {
    case minute, hour, day

    /// The longest range one request may cover, so a reply stays a reasonable line (7 days of minutes is
    /// at most 10 080 bins).
    public var maximumDays: Int? {
        switch self {
        case .minute: return 7
        case .hour: return 800
        case .day: return nil
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

/// Sums over one stretch of minutes, as the database returns them: a single minute for minute bins, a UTC
/// quarter-hour otherwise.
struct MinuteTotal: Equatable {
    /// Unix time of the stretch's first minute.
    var start: Date
    var steps: Int
    var distanceMeters: Double
    var floors: Int?
}

/// Groups database totals into history bins. Pure: the calendar (and so the time zone) comes in as a value.
enum HistoryBinning {
    /// Every time zone in use today is offset from UTC by a whole number of quarter-hours (Nepal +5:45,
    /// Chatham +12:45), so local hours and days are made of whole UTC quarter-hours: the database sums
    /// per quarter-hour and this groups those exactly.
    static let quarterMinutes: Int64 = 15

    /// The minute numbers (Unix minutes) that overlap [from, to): the minute `from` falls in counts whole,
    /// so "since 10:30:20" includes the 10:30 minute.
    static func minuteRange(from: Date, to: Date) -> Range<Int64> {
        let lower = Int64((from.timeIntervalSince1970 / 60).rounded(.down))
        let upper = Int64((to.timeIntervalSince1970 / 60).rounded(.up))
        return lower..<max(lower, upper)
    }

    static func validate(from: Date, to: Date, size: HistoryBinSize) throws {
        guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
        if let days = size.maximumDays, to.timeIntervalSince(from) > Double(days) * 86_400 {
            throw StoreError.rangeTooLong(bin: size, maximumDays: days)
        }
    }

    /// `totals` in time order: minutes for `.minute`, quarter-hours otherwise.
    static func bins(_ totals: [MinuteTotal], size: HistoryBinSize, calendar: Calendar) -> [HistoryBin] {
        if size == .minute {
            return totals.map {
                HistoryBin(start: $0.start, end: $0.start.addingTimeInterval(60), steps: $0.steps,
                           distanceMeters: $0.distanceMeters, floors: $0.floors)
            }
        }
        let unit: Calendar.Component = size == .hour ? .hour : .day
        var bins: [HistoryBin] = []
        for total in totals {
            guard let interval = calendar.dateInterval(of: unit, for: total.start) else { continue }
            if let last = bins.last, last.start == interval.start {
                bins[bins.count - 1].steps += total.steps
                bins[bins.count - 1].distanceMeters += total.distanceMeters
                if let floors = total.floors { bins[bins.count - 1].floors = (last.floors ?? 0) + floors }
            } else {
                bins.append(HistoryBin(start: interval.start, end: interval.end, steps: total.steps,
                                       distanceMeters: total.distanceMeters, floors: total.floors))
            }
        }
        return bins
    }
}
