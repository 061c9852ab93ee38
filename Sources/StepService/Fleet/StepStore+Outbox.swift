import Foundation
import GRDB

/// The MQTT outbox in the history database (tables `mqtt_outbox`, `mqtt_outbox_mark`, StoreSchema v2): minute
/// bins and visits are written here before they are sent and removed only when the broker acknowledges them,
/// so a broker down, a network gone, a restart or `kill -9` loses none. Every call runs on the store's queue,
/// after the commits of the steps before it, and completes there.
extension StepStore {
    /// The outcome of putting finished minutes into the outbox.
    struct Sealing: Sendable {
        /// Rows added now.
        var added: Int
        /// Rows in the outbox after it.
        var queued: Int
    }

    /// The first time the outbox is used, minutes up to `minute` count as already sent: a daemon that turns
    /// MQTT on publishes from then on, not its whole history. Returns the rows waiting from earlier runs.
    func startOutbox(markingSentThrough minute: Int64, completion: @escaping @Sendable (Result<Int, StoreError>) -> Void) {
        queue.async { [self] in
            completion(outboxWrite { db in
                try db.execute(sql: "INSERT OR IGNORE INTO mqtt_outbox_mark (id, minute) VALUES (1, ?)", arguments: [minute])
                return try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
            })
        }
    }

    /// Puts the bins of the minutes after the mark up to `newest` into the outbox, in order, and drops rows
    /// older than the retention period. Does nothing while steps recorded before it are not yet committed
    /// (the store failing): a minute goes out once, whole, as `history` has it.
    func sealMinutes(through newest: Int64, encode: @escaping @Sendable (_ minute: Int64, _ steps: Int, _ distanceMeters: Double,
                                                                         _ floors: Int?) -> (key: String, payload: String),
                     completion: @escaping @Sendable (Result<Sealing, StoreError>) -> Void) {
        queue.async { [self] in
            flushForReading()
            guard isCaughtUp else {
                completion(.failure(status.error.map { StoreError.unavailable(reason: $0) } ?? .unavailable(reason: "not committed yet")))
                return
            }
            let cutoff = Date().addingTimeInterval(-Double(configuration.retentionDays) * 86_400)
            completion(outboxWrite { db in
                let mark = try Int64.fetchOne(db, sql: "SELECT minute FROM mqtt_outbox_mark WHERE id = 1") ?? newest
                var added = 0
                if newest > mark {
                    let lowest = max(mark + 1, PendingWrites.minute(of: cutoff))
                    let rows = try Row.fetchAll(db, sql: """
                        SELECT minute, steps, distance_m, floors FROM minute_bin WHERE minute >= ? AND minute <= ? ORDER BY minute
                        """, arguments: [lowest, newest])
                    for row in rows {
                        let minute: Int64 = row[0]
                        let (key, payload) = encode(minute, row[1], row[2], row[3])
                        try Self.insertOutbox(db, kind: .minute, key: key, time: Date(timeIntervalSince1970: Double(minute) * 60),
                                              payload: payload)
                        added += 1
                    }
                    try db.execute(sql: "INSERT OR REPLACE INTO mqtt_outbox_mark (id, minute) VALUES (1, ?)", arguments: [newest])
                }
                try db.execute(sql: "DELETE FROM mqtt_outbox WHERE time < ?", arguments: [cutoff.timeIntervalSince1970])
                let queued = try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
                return Sealing(added: added, queued: queued)
            })
        }
    }

    /// Adds one message (a visit's arrival or departure) to the outbox; returns the rows queued after it.
    func enqueueOutbox(kind: OutboxKind, key: String, time: Date, payload: String,
                       completion: @escaping @Sendable (Result<Int, StoreError>) -> Void) {
        queue.async { [self] in
            completion(outboxWrite { db in
                try Self.insertOutbox(db, kind: kind, key: key, time: time, payload: payload)
                return try Int.fetchOne(db, sql: "SELECT count(*) FROM mqtt_outbox") ?? 0
            })
        }
    }

    /// The oldest rows after `id`, at most `limit`.
    func outboxRows(after id: Int64, limit: Int, completion: @escaping @Sendable (Result<[OutboxRow], StoreError>) -> Void) {
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
    func removeFromOutbox(ids: [Int64], completion: @escaping @Sendable (Result<Int, StoreError>) -> Void) {
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
    private func outboxWrite<T>(_ body: (Database) throws -> T) -> Result<T, StoreError> {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let database else {
            return .failure(.unavailable(reason: status.error ?? "the history database is not open"))
        }
        do {
            return .success(try database.write(body))
        } catch {
            return .failure(.cannotWrite(path: configuration.path, reason: Self.reason(error)))
        }
    }
}
