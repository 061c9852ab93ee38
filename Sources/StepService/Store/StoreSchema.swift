import GRDB

/// The database layout, as GRDB migrations: a database written by an older stepd is brought up to date on
/// open, never rebuilt.
///
/// - `minute_bin`: steps, distance and floors per UTC minute (`minute` = Unix time / 60). Only minutes
///   with something in them have a row.
/// - `counter`: one row, the count since the last reset and when that reset was, so a restart goes on
///   counting where it stopped.
/// - `track_point`, `visit`: the GPS path and the stays found on it.
enum StoreSchema {
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
        return migrator
    }
}
