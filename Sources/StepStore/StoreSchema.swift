import Foundation
import GRDB

/// The database layout, as GRDB migrations: a database written by an older stepd is brought up to date on
/// open, never rebuilt.
///
/// - `minute_bin`: steps, distance and floors climbed per UTC minute (`minute` = Unix time / 60). Only minutes
///   with something in them have a row.
/// - `counter`: one row, the count since the last reset and when that reset was, so a restart goes on
///   counting where it stopped; from v3 also the floors up and down since then (NULL while no barometer has
///   counted since the reset).
/// - `track_point`, `visit`: the GPS path and the stays found on it.
/// - `mqtt_outbox`, `mqtt_outbox_mark` (v2): messages for the MQTT broker kept until it acknowledges them, and
///   the newest minute put in the outbox (Fleet/StepStore+Outbox.swift).
/// - `mqtt_visit_mark` (v3): the newest visit whose arrival, and the newest whose departure, went into the outbox.
/// - `walking_bout` (v5): each walking bout that ended, with its gait measures (NULL where not given); and
///   `mqtt_bout_mark`, the newest bout put in the MQTT outbox (Fleet/FleetBouts.swift).
/// - `counter.distance_m` (v6): the distance of the steps since the reset, each step's own stride (NULL in a
///   database written before v6: the minute bins since the reset stand in).
enum StoreSchema {
    /// `PRAGMA application_id` of a stepd database ("STEP" in ASCII), as file(1) and sqlite3's `.dbinfo` show it.
    static let applicationID: Int32 = 0x5354_4550

    /// A file at the store's path that is not a stepd database: left as it is.
    struct NotOurs: Error, CustomStringConvertible {
        let applicationID: Int32
        let tables: [String]
        var description: String {
            let holding = tables.isEmpty ? "no tables" : "tables " + tables.prefix(5).joined(separator: ", ") + (tables.count > 5 ? ", ..." : "")
            return "not a stepd database (application_id \(applicationID), \(holding)); it is left as it is: "
                + "move it away and a fresh history starts, or put a stepd backup there"
        }
    }

    /// Whether the open file is stepd's: its application_id, or (a file written before stepd set one) no
    /// application_id and stepd's migrations table with the counter and minute bins, or nothing at all (a new
    /// file). Returns whether the application_id is still to be set; throws NotOurs for anything else.
    static func check(_ db: Database) throws -> Bool {
        let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        if id == applicationID { return false }
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        let olderStepd = ["grdb_migrations", "counter", "minute_bin"].allSatisfy(tables.contains)
        guard id == 0, tables.isEmpty || olderStepd else { throw NotOurs(applicationID: id, tables: tables) }
        return true
    }

    /// Why the file at `path` is not stepd's, looked at read-only before the store opens it: opening it for
    /// writing would already change it (WAL mode is written into its header). Nil when it is stepd's, new, or
    /// cannot be read this way (the open that follows then says why).
    static func refusal(path: String) -> NotOurs? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_size > 0 else { return nil }
        var config = GRDB.Configuration()
        config.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: config) else { return nil }
        defer { try? queue.close() }
        return try? queue.read { db -> NotOurs? in
            do {
                _ = try check(db)
                return nil
            } catch let refusal as NotOurs {
                return refusal
            }
        }
    }

    /// Claims a new file, or one written before stepd set its application_id, for stepd.
    static func claim(_ db: Database) throws {
        if try check(db) { try db.execute(sql: "PRAGMA application_id = \(applicationID)") }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: minute bins, counter, track, visits") { db in
            try db.create(table: "minute_bin") { t in
                t.primaryKey("minute", .integer)
                t.column("steps", .integer).notNull().defaults(to: 0)
                t.column("distance_m", .double).notNull().defaults(to: 0)
                // NULL until a floor source (a barometer) reports for that minute.
                t.column("floors", .integer)
            }
            try db.create(table: "counter") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("steps", .integer).notNull()
                t.column("since", .double).notNull()
                t.column("updated", .double).notNull()
            }
            try db.create(table: "track_point") { t in
                t.column("time", .double).notNull().indexed()
                t.column("latitude_deg", .double).notNull()
                t.column("longitude_deg", .double).notNull()
                t.column("altitude_msl_m", .double)
                t.column("eph_m", .double)
                t.column("mode", .text).notNull()
                t.column("satellites_used", .integer).notNull()
            }
            try db.create(table: "visit") { t in
                t.primaryKey("arrival", .double)
                t.column("departure", .double)
                t.column("latitude_deg", .double).notNull()
                t.column("longitude_deg", .double).notNull()
                t.column("radius_m", .double).notNull()
                t.column("fix_count", .integer).notNull()
            }
        }
        migrator.registerMigration("v2: MQTT outbox and the last minute queued") { db in
            try db.create(table: "mqtt_outbox") { t in
                // AUTOINCREMENT: an id is never reused, so the order of sending is the order of making.
                t.autoIncrementedPrimaryKey("id")
                t.column("kind", .text).notNull()
                t.column("key", .text).notNull()
                t.column("time", .double).notNull().indexed()
                t.column("payload", .text).notNull()
            }
            try db.create(table: "mqtt_outbox_mark") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                // The newest Unix minute whose bin (if any) went into the outbox.
                t.column("minute", .integer).notNull()
            }
        }
        migrator.registerMigration("v3: the newest visit events put in the MQTT outbox") { db in
            // Visits are sealed into the outbox from `visit`'s own rows, as minutes are from `minute_bin`'s, so that
            // a visit in history cannot miss the outbox when the daemon is killed between the two.
            try db.create(table: "mqtt_visit_mark") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                // Visits that arrived at or before this Unix time have their arrival message in the outbox (or sent).
                t.column("arrivals_through", .double).notNull()
                // Visits that arrived at or before this Unix time have their departure message in the outbox (or sent).
                t.column("departures_through", .double).notNull()
            }
        }
        migrator.registerMigration("v4: floors since the last reset in the counter") { db in
            try db.alter(table: "counter") { t in
                t.add(column: "floors_ascended", .integer)
                t.add(column: "floors_descended", .integer)
            }
        }
        migrator.registerMigration("v5: walking bouts with their gait measures") { db in
            try db.create(table: "walking_bout") { t in
                // Unix times of the bout's first and last step.
                t.primaryKey("start", .double)
                t.column("end", .double).notNull().indexed()
                t.column("steps", .integer).notNull()
                t.column("cadence_spm", .double).notNull()
                t.column("stride_time_s", .double)
                t.column("stride_time_cv", .double)
                t.column("regularity", .double)
                t.column("symmetry", .double)
                t.column("step_length_m", .double)
                t.column("speed_mps", .double)
                t.column("placement", .text).notNull()
            }
            try db.create(table: "mqtt_bout_mark") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                // Bouts that started at or before this Unix time are in the MQTT outbox (or sent).
                t.column("starts_through", .double).notNull()
            }
        }
        migrator.registerMigration("v6: distance since the last reset in the counter") { db in
            try db.alter(table: "counter") { t in
                t.add(column: "distance_m", .double)
            }
        }
        return migrator
    }
}
