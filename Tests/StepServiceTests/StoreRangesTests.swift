import Foundation
import GRDB
@testable import StepEngine
@testable import StepFleet
import StepProcessing
import StepProtocol
@testable import StepStore
import XCTest

/// Every column the store reads back, written with each extreme a hand or a bad card can leave (the largest and
/// smallest integers, infinity, 1e300, a negative, a text, NULL): the store opens without a trap, refuses the file
/// naming the table, row and column, and counts on in memory; a file whose values are all in range opens as before.
final class StoreRangesTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = "/tmp/stepd-ranges-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func makeStore() -> StepStore {
        StepStore(configuration: StepStore.Configuration(directory: directory, stepHoldBackSeconds: Engine().stepHoldBackSeconds))
    }

    /// A store made by StepStore, with one sound row in every table it reads back.
    private func seed() throws {
        let now = Date().timeIntervalSince1970
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.record(.step(count: 1, time: Date(), distanceMeters: 0.7))
        XCTAssertNotNil(store.close())
        let db = try DatabaseQueue(path: directory + "/stepd.sqlite")
        try db.write { db in
            try db.execute(sql: "UPDATE counter SET floors_ascended = 1, floors_descended = 1")
            try db.execute(sql: "UPDATE minute_bin SET floors = 1")
            try db.execute(sql: "INSERT INTO track_point VALUES (?, 51.5, -0.1, 10, 5, '3d', 7)", arguments: [now - 30])
            try db.execute(sql: "INSERT INTO visit VALUES (?, ?, 51.5, -0.1, 30, 10)", arguments: [now - 600, now - 60])
            try db.execute(sql: "INSERT INTO walking_bout VALUES (?, ?, 100, 110, 1.1, 0.05, 0.8, 0.9, 0.7, 1.2, 'pocket')",
                           arguments: [now - 300, now - 200])
            try db.execute(sql: "INSERT INTO mqtt_outbox (kind, key, time, payload) VALUES ('minute', 'k', ?, '{}')", arguments: [now])
            try db.execute(sql: "INSERT INTO mqtt_outbox_mark VALUES (1, ?)", arguments: [Int64(now / 60)])
            try db.execute(sql: "INSERT INTO mqtt_visit_mark VALUES (1, ?, ?)", arguments: [now, now])
            try db.execute(sql: "INSERT INTO mqtt_bout_mark VALUES (1, ?)", arguments: [now])
        }
        try db.close()
    }

    private static let extremes: [(String, DatabaseValue)] = [
        ("max", Int64.max.databaseValue), ("min", Int64.min.databaseValue), ("infinity", Double.infinity.databaseValue),
        ("-infinity", (-Double.infinity).databaseValue), ("1e300", 1e300.databaseValue), ("negative", (-1).databaseValue),
        ("text", "many".databaseValue), ("NULL", .null),
    ]

    func testASoundStoreOpensAndEveryExtremeIsAStoreFaultNamingItsRow() throws {
        try seed()
        let sound = makeStore()
        let saved = sound.open(fresh: .init(steps: 0, since: Date()))
        XCTAssertEqual(sound.status.state, "ok", sound.status.error ?? "")
        XCTAssertEqual(saved.steps, 1)
        sound.close()
        let pristine = directory + "/pristine.sqlite"
        try FileManager.default.copyItem(atPath: directory + "/stepd.sqlite", toPath: pristine)

        var refused = 0
        for (table, columns) in StoreRanges.tables {
            for column in columns {
                for (name, value) in Self.extremes {
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory + "/stepd.sqlite" + suffix) }
                    try FileManager.default.copyItem(atPath: pristine, toPath: directory + "/stepd.sqlite")
                    let what = "\(table).\(column.name) = \(name)"
                    let db = try DatabaseQueue(path: directory + "/stepd.sqlite")
                    // A NOT NULL column refuses NULL, an INTEGER PRIMARY KEY a text: nothing to read back then.
                    let stored = try? db.write { db -> DatabaseValue? in
                        try db.execute(sql: "UPDATE \(table) SET \"\(column.name)\" = ?", arguments: [value])
                        // As SQLite keeps it: a number in a text column becomes a text, an integer in a real one a real.
                        return try DatabaseValue.fetchOne(db, sql: "SELECT \"\(column.name)\" FROM \(table)")
                    }
                    try db.close()
                    guard let stored else { continue }

                    let store = makeStore()
                    let counter = store.open(fresh: .init(steps: 0, since: Date()))
                    let status = store.status
                    if Self.inRange(stored, column) {
                        XCTAssertEqual(status.state, "ok", "\(what): \(status.error ?? "")")
                    } else {
                        refused += 1
                        XCTAssertEqual(status.state, "failed", what)
                        let error = status.error ?? ""
                        XCTAssertTrue(error.contains("holds a value outside its range (\(table) row ") && error.contains("has \(column.name) = "),
                                      "\(what): \(error)")
                        XCTAssertEqual(counter.steps, 0, "\(what): counting starts afresh in memory")
                        // Counting goes on, and the store keeps it from the file it refused.
                        store.record(.step(count: 1, time: Date(), distanceMeters: 0.7))
                        XCTAssertThrowsError(try store.history(from: Date().addingTimeInterval(-3600), to: Date(), size: .minute), what)
                    }
                    store.close()
                }
            }
        }
        XCTAssertGreaterThan(refused, 200)
    }

    /// The column's range, said again in Swift rather than in the SQL the store runs.
    private static func inRange(_ value: DatabaseValue, _ column: StoreRanges.Column) -> Bool {
        switch value.storage {
        case .null: return column.nullable
        case .int64(let number): return column.kind != .text && column.range.contains(Double(number))
        case .double(let number): return column.kind == .real && column.range.contains(number)
        case .string(let text): return column.kind == .text && column.range.contains(Double(text.count))
        case .blob: return false
        }
    }

    /// A file refused is not scanned again every few seconds until it changes; once the row is mended it opens.
    func testAMendedRowOpensTheStore() throws {
        try seed()
        let db = try DatabaseQueue(path: directory + "/stepd.sqlite")
        try db.write { try $0.execute(sql: "UPDATE counter SET steps = 9223372036854775800") }
        try db.close()
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        XCTAssertEqual(store.status.state, "failed")
        XCTAssertTrue(store.status.error?.contains("counter row 1 has steps = 9223372036854775800, not an integer from 0 to 1000000000") ?? false,
                      store.status.error ?? "")
        store.close()
        let mend = try DatabaseQueue(path: directory + "/stepd.sqlite")
        try mend.write { try $0.execute(sql: "UPDATE counter SET steps = 12") }
        try mend.close()
        let again = makeStore()
        XCTAssertEqual(again.open(fresh: .init(steps: 0, since: Date())).steps, 12)
        XCTAssertEqual(again.status.state, "ok")
        again.close()
    }

    /// The sites that trapped on a stored value: each holds at its bound.
    func testCountsAndTimesAtTheirBoundsDoNotTrap() {
        XCTAssertEqual(Int.max.addingSaturated(1), .max)
        XCTAssertEqual(Int.min.addingSaturated(-1), .min)
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: 1e300)), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: -1e300)), "0001-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.string(Date(timeIntervalSince1970: .nan)), "1970-01-01T00:00:00.000Z")
        let partial = FleetPayloads.minute(device: "d", minute: .max, steps: .max, distanceMeters: .infinity, floors: .max, partial: true)
        XCTAssertTrue(partial.key.hasPrefix("d/9999-12-31T"), partial.key)
        var day = DayCounter(now: Date(), zone: .utc)
        day.restore([.init(start: Date(), steps: .max, distanceMeters: 1, floorsAscended: .max),
                     .init(start: Date(), steps: .max, distanceMeters: 1, floorsAscended: .max)], floorsDescended: .max)
        XCTAssertEqual(day.today.steps, .max)
        day.step(at: Date(), distanceMeters: 1)
        XCTAssertEqual(day.today.steps, .max)
    }
}
