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
/// - `counter.distance_m` (v5): the distance of the steps since the reset, each step's own stride (NULL in a
///   database written before: the minute bins since the reset stand in).
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
        migrator.registerMigration("v5: distance since the last reset in the counter") { db in
            try db.alter(table: "counter") { t in
                t.add(column: "distance_m", .double)
            }
        }
        return migrator
    }
}
