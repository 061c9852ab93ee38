import ArgumentParser
import Foundation
import StepProtocol
import Timekeeping

/// `stepctl history`: steps per minute, hour or day from the daemon's store, as a table.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Steps and distance per minute, hour or day from the daemon's history.",
        discussion: """
            --today shows today's hours; --since 7d shows today and the six days before, one line per day.
            Days, dates and "today" are the daemon's (its time zone, from STATUS). Days without steps show 0.
            """)

    @OptionGroup var options: ConnectionOptions

    @Flag(help: "Today, from local midnight (hour bins unless --bin says otherwise).")
    var today = false

    @Option(help: "How far back: 7d (today and 6 days before), 12h, 90m, a local date (2026-11-20), or an ISO-8601 time.")
    var since: String?

    @Option(help: "The end: a local date (through the end of that day) or an ISO-8601 time (default now).")
    var until: String?

    @Option(help: "Bin size: minute, hour or day (default: hour for --today, day for --since in days).")
    var bin: String?

    @Flag(help: "Also list the walking bouts that start in the range, with their gait measures (docs/gait.md).")
    var bouts = false

    func validate() throws {
        if today, since != nil { throw ValidationError("give --today or --since, not both") }
        if let bin, !["minute", "hour", "day"].contains(bin) {
            throw ValidationError("--bin must be minute, hour or day")
        }
        if let since { _ = try Self.parseSince(since, now: SystemClock().now) }
        if let until { _ = try Self.parseUntil(until, option: "--until") }
    }

    func run() throws {
        let now = SystemClock().now
        let client = try exitOnError { try options.connect() }
        // "Today" and dates are the daemon's: its days are what its history bins by.
        let calendar = calendar(in: try exitOnError { try daemonTimeZone(client) })
        var from = calendar.startOfDay(for: now)
        var size = bin ?? "hour"
        if let since {
            let parsed = try Self.parseSince(since, now: now, calendar: calendar)
            from = parsed.from
            size = bin ?? parsed.defaultBin
        }
        let to = try until.map { try Self.parseUntil($0, calendar: calendar, option: "--until") } ?? now
        var fields: [String: JSONValue] = [
            "from": .string(Timestamp.string(from, in: calendar.timeZone)),
            "to": .string(Timestamp.string(to, in: calendar.timeZone)), "bin": .string(size),
        ]
        if bouts { fields["bouts"] = .bool(true) }
        let request = Request(command: .history, fields: fields)
        let (history, raw) = try exitOnError { try client.request(request, expecting: HistoryMessage.self) }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        var rows: [Row]
        if size == "day" {
            rows = Self.days(from: from, to: to, calendar: calendar).map { Row(label: $0, steps: 0, distanceMeters: 0) }
            for bin in history.bins {
                guard let date = bin.date, let i = rows.firstIndex(where: { $0.label == date }) else { continue }
                rows[i].steps = bin.steps
                rows[i].distanceMeters = bin.distance_m
                rows[i].floors = bin.floors
            }
        } else {
            rows = history.bins.map { bin in
                Row(label: Self.label(bin.start, size: size), steps: bin.steps, distanceMeters: bin.distance_m, floors: bin.floors)
            }
        }
        let total = Row(label: "total", steps: history.steps, distanceMeters: history.distance_m, floors: history.floors)
        emit(Self.table(rows, heading: size == "day" ? "date" : size == "hour" ? "hour" : "minute", total: total))
        if let walks = history.bouts {
            emit("")
            emit(walks.isEmpty ? "no walking bouts" : "walking bouts:")
            for bout in walks {
                // The BOUT event's line, which starts with the bout's end.
                emit(describe(event: .bout(bout)))
            }
        }
    }

    /// "7d" → local midnight six days ago (day bins); "12h", "90m" → that long ago; "2026-11-20" → that local
    /// midnight (day bins); an ISO-8601 time as is. The one reading of a start time: history's --since, track's
    /// and visits' --from.
    static func parseSince(_ text: String, now: Date, calendar: Calendar = .current,
                           option: String = "--since") throws -> (from: Date, defaultBin: String) {
        if let date = Timestamp.date(text) { return (date, "hour") }
        if let midnight = localDate(text, calendar: calendar) { return (midnight, "day") }
        guard let unit = text.last, let amount = Int(text.dropLast()), amount > 0 else {
            throw ValidationError("\(option) must look like 2026-11-20, 7d, 12h, 90m or an ISO-8601 time, not '\(text)'")
        }
        switch unit {
        case "d":
            let start = calendar.date(byAdding: .day, value: -(amount - 1), to: calendar.startOfDay(for: now))!
            return (start, "day")
        case "h": return (now.addingTimeInterval(-Double(amount) * 3600), "hour")
        case "m": return (now.addingTimeInterval(-Double(amount) * 60), "minute")
        default: throw ValidationError("\(option) must end in d, h or m, not '\(unit)'")
        }
    }

    /// An end time: an ISO-8601 time as is, or a local date through its end (the next local midnight).
    static func parseUntil(_ text: String, calendar: Calendar = .current, option: String = "--until") throws -> Date {
        if let date = Timestamp.date(text) { return date }
        if let midnight = localDate(text, calendar: calendar) { return calendar.date(byAdding: .day, value: 1, to: midnight)! }
        throw ValidationError("\(option) must be a local date (2026-11-20) or an ISO-8601 time such as 2026-11-22T08:00:00Z, not '\(text)'")
    }

    /// "2026-11-20" → that day's local midnight in `calendar`'s zone.
    private static func localDate(_ text: String, calendar: Calendar) -> Date? {
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = calendar.timeZone
        day.dateFormat = "yyyy-MM-dd"
        return day.date(from: text).map { calendar.startOfDay(for: $0) }
    }

    /// The local days from `from` up to `to`, as YYYY-MM-DD.
    static func days(from: Date, to: Date, calendar: Calendar) -> [String] {
        var days: [String] = []
        var day = calendar.startOfDay(for: from)
        while day < to {
            days.append(Timestamp.day(day, in: calendar.timeZone))
            day = calendar.date(byAdding: .day, value: 1, to: day)!
        }
        return days
    }

    /// The bin's local start without what every row shares: "2026-11-22 14:00".
    static func label(_ start: String, size: String) -> String {
        let text = start.replacingOccurrences(of: "T", with: " ")
        return String(text.prefix(size == "hour" ? 13 : 16)) + (size == "hour" ? ":00" : "")
    }

    /// One line of the table; `floors` is nil where no barometer reported.
    struct Row {
        var label: String
        var steps: Int
        var distanceMeters: Double
        var floors: Int?
    }

    /// The table; a `floors` column only when a barometer reported in the period (the total has floors).
    static func table(_ rows: [Row], heading: String, total: Row) -> String {
        let width = max(heading.count, rows.map(\.label.count).max() ?? 0, 5)
        let withFloors = total.floors != nil
        func right(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        func line(_ label: String, _ steps: String, _ distance: String, _ floors: String) -> String {
            label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + right(steps, 8) + "  " + right(distance, 12)
                + (withFloors ? "  " + right(floors, 6) : "")
        }
        func row(_ r: Row) -> String {
            line(r.label, String(r.steps), String(format: "%.2f", r.distanceMeters / 1000), r.floors.map(String.init) ?? "-")
        }
        return ([line(heading, "steps", "distance_km", "floors")] + rows.map(row) + [row(total)]).joined(separator: "\n")
    }
}
