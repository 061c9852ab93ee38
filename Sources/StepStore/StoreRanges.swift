import Foundation
import GRDB

/// The physical range of every value the store reads back, checked in SQL before anything is decoded: GRDB
/// stops the process on a text where an integer is read, and Swift traps on a count or a time beyond Int64 (a
/// counter of 9223372036854775800 steps overflowed at the first step; a minute bin at minute 2^63 - 1 when
/// its time was formatted). A database holding a value outside its range is refused as a whole, like a file
/// that is not a database: left as it is, and named with the row in STATUS, so that a person can mend the
/// row (or move the file away) rather than the daemon trusting any of it.
enum StoreRanges {
    /// A value's kind and bounds in one table's column.
    struct Column {
        enum Kind { case integer, real, text }
        var name: String
        var kind: Kind
        var range: ClosedRange<Double>
        var nullable = false
        var expected: String

        /// SQL true exactly when the column's value is acceptable; never NULL (NOT of it would be NULL too).
        var acceptable: String {
            // Quoted: `end`, `key` and `time` are SQL keywords, and `end` would close the CASE it sits in.
            let name = "\"\(self.name)\""
            let inRange = "\(name) BETWEEN \(Self.literal(range.lowerBound)) AND \(Self.literal(range.upperBound))"
            let typed: String
            switch kind {
            case .integer: typed = "typeof(\(name)) = 'integer' AND \(inRange)"
            case .real: typed = "typeof(\(name)) IN ('integer', 'real') AND \(inRange)"
            case .text: typed = "typeof(\(name)) = 'text' AND length(\(name)) BETWEEN \(Int(range.lowerBound)) AND \(Int(range.upperBound))"
            }
            return nullable ? "(\(name) IS NULL OR (\(typed)))" : "(\(typed))"
        }

        private static func literal(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
    }

    /// A count of steps or floors: a billion is 30 years at 90,000 steps a day.
    static let maximumCount = 1e9
    /// A minute's steps: far above any walk (a few hundred), room for a step counter chip's backlog handed over at once.
    static let maximumMinuteCount = 1e6
    /// A distance in metres: a billion steps of 10 m.
    static let maximumDistance = 1e10
    /// A Unix time, 1970-01-01 to 9999-12-31: what Timestamp writes, and every time the store has made.
    static let times = 0.0...253_402_300_799.0
    static var minutes: ClosedRange<Double> { 0...(times.upperBound / 60).rounded(.down) }

    private static func count(_ name: String, max: Double = maximumCount, nullable: Bool = false) -> Column {
        Column(name: name, kind: .integer, range: 0...max, nullable: nullable,
               expected: "an integer from 0 to \(Int(max))" + (nullable ? " or NULL" : ""))
    }

    private static func real(_ name: String, _ range: ClosedRange<Double>, nullable: Bool = false, what: String = "a number") -> Column {
        Column(name: name, kind: .real, range: range, nullable: nullable,
               expected: "\(what) from \(format(range.lowerBound)) to \(format(range.upperBound))" + (nullable ? " or NULL" : ""))
    }

    private static func time(_ name: String, nullable: Bool = false) -> Column {
        Column(name: name, kind: .real, range: times, nullable: nullable,
               expected: "a Unix time from 1970 to 9999" + (nullable ? " or NULL" : ""))
    }

    private static func text(_ name: String, maximumLength: Int) -> Column {
        Column(name: name, kind: .text, range: 0...Double(maximumLength), expected: "a text of at most \(maximumLength) characters")
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Every table the store reads back, with its columns. Gait measures are ratios and seconds of a stride:
    /// any finite number well beyond them is harmless, so they are only held to ±1e6.
    static let tables: [(table: String, columns: [Column])] = [
        ("counter", [count("steps"), time("since"), time("updated"), count("floors_ascended", nullable: true),
                     count("floors_descended", nullable: true), real("distance_m", 0...maximumDistance, nullable: true, what: "metres")]),
        ("minute_bin", [Column(name: "minute", kind: .integer, range: minutes, expected: "a Unix minute from 1970 to 9999"),
                        count("steps", max: maximumMinuteCount), real("distance_m", 0...maximumDistance, what: "metres"),
                        count("floors", max: maximumMinuteCount, nullable: true)]),
        ("track_point", [time("time"), real("latitude_deg", -90...90, what: "degrees"), real("longitude_deg", -180...180, what: "degrees"),
                         real("altitude_msl_m", -1e5...1e6, nullable: true, what: "metres"),
                         real("eph_m", 0...1e7, nullable: true, what: "metres"), text("mode", maximumLength: 16),
                         count("satellites_used", max: 1000)]),
        ("visit", [time("arrival"), time("departure", nullable: true), real("latitude_deg", -90...90, what: "degrees"),
                   real("longitude_deg", -180...180, what: "degrees"), real("radius_m", 0...1e7, what: "metres"), count("fix_count")]),
        ("walking_bout", [time("start"), time("end"), count("steps"), real("cadence_spm", 0...1e6),
                          real("stride_time_s", -1e6...1e6, nullable: true), real("stride_time_cv", -1e6...1e6, nullable: true),
                          real("regularity", -1e6...1e6, nullable: true), real("symmetry", -1e6...1e6, nullable: true),
                          real("step_length_m", -1e6...1e6, nullable: true), real("speed_mps", -1e6...1e6, nullable: true),
                          text("placement", maximumLength: 64)]),
        ("mqtt_outbox", [text("kind", maximumLength: 64), text("key", maximumLength: 4096), time("time"),
                         text("payload", maximumLength: 1 << 20)]),
        ("mqtt_outbox_mark", [Column(name: "minute", kind: .integer, range: minutes, expected: "a Unix minute from 1970 to 9999")]),
        ("mqtt_visit_mark", [time("arrivals_through"), time("departures_through")]),
        ("mqtt_bout_mark", [time("starts_through")]),
    ]

    /// A value outside its range: where it is and what was expected.
    struct Violation: Equatable, CustomStringConvertible {
        var table: String
        var rowID: Int64
        var column: String
        /// SQLite's `quote()` of the value: `9223372036854775807`, `1.0e+300`, `'text'`, `NULL`.
        var value: String
        var expected: String

        var description: String {
            "\(table) row \(rowID) has \(column) = \(value), not \(expected)"
        }
    }

    /// The first value out of range, table by table, or nil. Tables and columns missing (a file of an older
    /// schema, read without migrating) are skipped. One scan per table that stops at the first bad row.
    static func firstViolation(_ db: Database) throws -> Violation? {
        for (table, columns) in tables where try db.tableExists(table) {
            let present = Set(try db.columns(in: table).map(\.name))
            let checked = columns.filter { present.contains($0.name) }
            guard !checked.isEmpty else { continue }
            let which = checked.map { "WHEN NOT \($0.acceptable) THEN '\($0.name)'" }.joined(separator: " ")
            let value = checked.map { "WHEN NOT \($0.acceptable) THEN quote(\"\($0.name)\")" }.joined(separator: " ")
            let all = checked.map(\.acceptable).joined(separator: " AND ")
            let sql = "SELECT rowid, CASE \(which) END, CASE \(value) END FROM \(table) WHERE NOT (\(all)) LIMIT 1"
            guard let row = try Row.fetchOne(db, sql: sql) else { continue }
            let name: String = row[1] ?? "?"
            let expected = checked.first { $0.name == name }?.expected ?? "in range"
            let quoted: String = row[2] ?? "NULL"
            // A text quoted whole could fill STATUS: its first characters say what it is.
            let shown = quoted.count > 40 ? quoted.prefix(40) + "..." : quoted
            return Violation(table: table, rowID: row[0], column: name, value: String(shown), expected: expected)
        }
        return nil
    }
}
