import Foundation
import GRDB

/// The MQTT outbox in the history database (tables `mqtt_outbox`, `mqtt_outbox_mark`, StoreSchema v2;
/// `mqtt_visit_mark`, v3): minute bins and visits are written here before they are sent and removed only when the
/// broker acknowledges them, so a broker down, a network gone, a restart or `kill -9` loses none. Both are sealed
/// from the store's own rows (`minute_bin`, `visit`) with a mark moved in the same transaction: what history
/// holds goes into the outbox once, even when the daemon was killed before the publisher heard of it. Every call
/// runs on the store's queue, after the commits of the steps and visits before it, and completes there.
extension StepStore {
    /// The outcome of putting finished minutes and visits into the outbox.
    package struct Sealing: Sendable {
        /// Rows added now.
        package var added: Int
        /// Rows in the outbox after it.
        package var queued: Int
    }

    /// How the publisher words what the store seals (FleetPayloads).
    package struct OutboxEncoder: Sendable {
        /// A finished minute bin (Unix minute).
        var minute: @Sendable (_ minute: Int64, _ steps: Int, _ distanceMeters: Double, _ floors: Int?) -> (key: String, payload: String)
        /// A visit's arrival (the visit without its departure) or departure.
        var visit: @Sendable (StoredVisit) -> (key: String, payload: String)
        /// A walking bout that ended (FleetBouts.swift).
        var bout: @Sendable (StoredBout) -> (key: String, payload: String)

        package init(minute: @escaping @Sendable (_ minute: Int64, _ steps: Int, _ distanceMeters: Double, _ floors: Int?) -> (key: String, payload: String),
                     visit: @escaping @Sendable (StoredVisit) -> (key: String, payload: String),
                     bout: @escaping @Sendable (StoredBout) -> (key: String, payload: String)) {
            self.minute = minute
            self.visit = visit
            self.bout = bout
        }
    }

    /// The first time the outbox is used, minutes up to `minute` and the visits already in history count as
    /// sent: a daemon that turns MQTT on publishes from then on, not its whole history. Returns the rows
    /// waiting from earlier runs.
    package func startOutbox(markingSentThrough minute: Int64, completion: @escaping @Sendable (Result<Int, StoreError>) -> Void) {
        queue.async { [self] in
            flushForReading()
            completion(outboxWrite { db in
                try db.execute(sql: "INSERT OR IGNORE INTO mqtt_outbox_mark (id, minute) VALUES (1, ?)", arguments: [minute])
                try db.execute(sql: """
                    INSERT OR IGNORE INTO mqtt_visit_mark (id, arrivals_through, departures_through) VALUES (1,
                        (SELECT coalesce(max(arrival), 0) FROM visit),
                        (SELECT coalesce(max(arrival), 0) FROM visit WHERE departure IS NOT NULL))
                    """)
                try Self.startBoutMark(db)
                return try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
            })
        }
    }

    /// Puts into the outbox, in one transaction and in order, the bins of the minutes after the mark up to
    /// `newest` and the arrivals and departures of visits after theirs, and drops rows older than the retention
    /// period. Does nothing while what was recorded before it is not yet committed (the store failing): a minute
    /// goes out once, whole, as `history` has it.
    package func sealOutbox(through newest: Int64, encoder: OutboxEncoder,
                    completion: @escaping @Sendable (Result<Sealing, StoreError>) -> Void) {
        queue.async { [self] in
            flushForReading()
            guard isCaughtUp else {
                completion(.failure(status.error.map { StoreError.unavailable(reason: $0) } ?? .unavailable(reason: "not committed yet")))
                return
            }
            let cutoff = clock.now.addingTimeInterval(-Double(configuration.retentionDays) * 86_400)
            completion(outboxWrite { db in
                let added = try Self.sealMinutes(db, through: newest, cutoff: cutoff, encode: encoder.minute)
                    + Self.sealVisits(db, cutoff: cutoff, encode: encoder.visit)
                    + Self.sealBouts(db, cutoff: cutoff, encode: encoder.bout)
                // The outbox is bounded like the history: what a broker gone for longer never gets is dropped.
                try db.execute(sql: "DELETE FROM mqtt_outbox WHERE time < ?", arguments: [cutoff.timeIntervalSince1970])
                let queued = try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
                return Sealing(added: added, queued: queued)
            })
        }
    }

    private static func sealMinutes(_ db: Database, through newest: Int64, cutoff: Date,
                                    encode: (Int64, Int, Double, Int?) -> (key: String, payload: String)) throws -> Int {
        let mark = try Int64.fetchOne(db, sql: "SELECT minute FROM mqtt_outbox_mark WHERE id = 1") ?? newest
        guard newest > mark else { return 0 }
        let rows = try Row.fetchAll(db, sql: """
            SELECT minute, steps, distance_m, floors FROM minute_bin WHERE minute >= ? AND minute <= ? ORDER BY minute
            """, arguments: [max(mark + 1, PendingWrites.minute(of: cutoff)), newest])
        for row in rows {
            let minute: Int64 = row[0]
            let (key, payload) = encode(minute, row[1], row[2], row[3])
            try insertOutbox(db, kind: .minute, key: key, time: Date(timeIntervalSince1970: Double(minute) * 60), payload: payload)
        }
        try db.execute(sql: "INSERT OR REPLACE INTO mqtt_outbox_mark (id, minute) VALUES (1, ?)", arguments: [newest])
        return rows.count
    }

    /// The arrivals and departures history holds that the marks say are not in the outbox yet, by time. Only
    /// the newest visit can still be open, so two times mark what went in: visits arrived up to the first have
    /// had their arrival sealed, up to the second their departure. No mark yet (the outbox not started): nothing.
    private static func sealVisits(_ db: Database, cutoff: Date, encode: (StoredVisit) -> (key: String, payload: String)) throws -> Int {
        guard let mark = try Row.fetchOne(db, sql: "SELECT arrivals_through, departures_through FROM mqtt_visit_mark WHERE id = 1")
        else { return 0 }
        let (arrivalsThrough, departuresThrough): (Double, Double) = (mark[0], mark[1])
        let oldest = cutoff.timeIntervalSince1970
        let arrived = try Row.fetchAll(db, sql: """
            SELECT \(visitColumns) FROM visit WHERE arrival > ? AND coalesce(departure, arrival) >= ? ORDER BY arrival
            """, arguments: [arrivalsThrough, oldest]).map(storedVisit)
        let departed = try Row.fetchAll(db, sql: """
            SELECT \(visitColumns) FROM visit WHERE arrival > ? AND departure >= ? ORDER BY arrival
            """, arguments: [departuresThrough, oldest]).map(storedVisit)
        // An arrival sealed after its visit ended (the daemon killed in between) still reads as an arrival.
        var events = arrived.map { visit -> (time: Date, order: Int, visit: StoredVisit) in
            var arrival = visit
            arrival.departure = nil
            return (visit.arrival, 0, arrival)
        }
        events += departed.compactMap { visit in visit.departure.map { ($0, 1, visit) } }
        events.sort { ($0.time, $0.order) < ($1.time, $1.order) }
        for event in events {
            let (key, payload) = encode(event.visit)
            try insertOutbox(db, kind: .visit, key: key, time: event.time, payload: payload)
        }
        try db.execute(sql: "UPDATE mqtt_visit_mark SET arrivals_through = ?, departures_through = ? WHERE id = 1",
                       arguments: [max(arrivalsThrough, arrived.last?.arrival.timeIntervalSince1970 ?? 0),
                                   max(departuresThrough, departed.last?.arrival.timeIntervalSince1970 ?? 0)])
        return events.count
    }

    /// The bins of the minutes after the outbox's mark, as they stand: not finished, so not in the outbox yet. A
    /// clean stop publishes them (`partial`); the mark stays, so each is sealed, finished, after the next start.
    package func unfinishedMinutes(encoder: OutboxEncoder,
                           completion: @escaping @Sendable (Result<[(key: String, payload: String)], StoreError>) -> Void) {
        queue.async { [self] in
            flushForReading()
            completion(outboxWrite { db in
                guard let mark = try Int64.fetchOne(db, sql: "SELECT minute FROM mqtt_outbox_mark WHERE id = 1") else { return [] }
                return try Row.fetchAll(db, sql: """
                    SELECT minute, steps, distance_m, floors FROM minute_bin WHERE minute > ? ORDER BY minute
                    """, arguments: [mark]).map { row in encoder.minute(row[0], row[1], row[2], row[3]) }
            })
        }
    }

    /// The oldest rows after `id`, at most `limit`.
    package func outboxRows(after id: Int64, limit: Int, completion: @escaping @Sendable (Result<[OutboxRow], StoreError>) -> Void) {
        queue.async { [self] in
            completion(outboxWrite { db in
                try Row.fetchAll(db, sql: "SELECT id, kind, key, time, payload FROM mqtt_outbox WHERE id > ? ORDER BY id LIMIT ?",
                                 arguments: [id, limit]).compactMap { row -> OutboxRow? in
                    guard let kind = OutboxKind(rawValue: row[1]) else { return nil }
                    return OutboxRow(id: row[0], kind: kind, key: row[2], time: Date(timeIntervalSince1970: row[3]), payload: row[4])
                }
            })
        }
    }

    /// Removes the rows the broker acknowledged; returns the rows still queued.
    package func removeFromOutbox(ids: [Int64], completion: @escaping @Sendable (Result<Int, StoreError>) -> Void) {
        queue.async { [self] in
            completion(outboxWrite { db in
                for id in ids { try db.execute(sql: "DELETE FROM mqtt_outbox WHERE id = ?", arguments: [id]) }
                return try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
            })
        }
    }

    private static func insertOutbox(_ db: Database, kind: OutboxKind, key: String, time: Date, payload: String) throws {
        try db.execute(sql: "INSERT INTO mqtt_outbox (kind, key, time, payload) VALUES (?, ?, ?, ?)",
                       arguments: [kind.rawValue, key, time.timeIntervalSince1970, payload])
    }

    /// A write on the store's queue; a store that is away or failing is an error the publisher retries later.
    private func outboxWrite<T: Sendable>(_ body: (Database) throws -> T) -> Result<T, StoreError> {
        transaction(body)
    }
}

extension StepStore {
    /// The first time the outbox is used, the bouts already in history count as sent.
    static func startBoutMark(_ db: Database) throws {
        try db.execute(sql: """
            INSERT OR IGNORE INTO mqtt_bout_mark (id, starts_through) VALUES (1, (SELECT coalesce(max(start), 0) FROM walking_bout))
            """)
    }

    /// The bouts history holds that started after the mark, oldest first; moves the mark past them.
    static func sealBouts(_ db: Database, cutoff: Date, encode: (StoredBout) -> (key: String, payload: String)) throws -> Int {
        guard let through = try Double.fetchOne(db, sql: "SELECT starts_through FROM mqtt_bout_mark WHERE id = 1") else { return 0 }
        let rows = try Row.fetchAll(db, sql: """
            SELECT start, end, steps, cadence_spm, stride_time_s, stride_time_cv, regularity, symmetry, step_length_m,
                speed_mps, placement FROM walking_bout WHERE start > ? AND end >= ? ORDER BY start
            """, arguments: [through, cutoff.timeIntervalSince1970])
        var newest = through
        for row in rows {
            let bout = StoredBout(start: Date(timeIntervalSince1970: row[0]), end: Date(timeIntervalSince1970: row[1]),
                                  steps: row[2], cadenceStepsPerMinute: row[3],
                                  gait: .init(strideTimeSeconds: row[4], strideTimeCV: row[5], regularity: row[6],
                                              symmetry: row[7], stepLengthMeters: row[8], speedMetersPerSecond: row[9]),
                                  placement: row[10])
            let (key, payload) = encode(bout)
            try db.execute(sql: "INSERT INTO mqtt_outbox (kind, key, time, payload) VALUES (?, ?, ?, ?)",
                           arguments: [OutboxKind.bout.rawValue, key, bout.end.timeIntervalSince1970, payload])
            newest = max(newest, bout.start.timeIntervalSince1970)
        }
        try db.execute(sql: "UPDATE mqtt_bout_mark SET starts_through = ? WHERE id = 1", arguments: [newest])
        return rows.count
    }
}
