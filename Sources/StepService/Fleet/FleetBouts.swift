import Foundation
import GRDB
import StepProtocol

/// Walking bouts on MQTT: each bout the history keeps goes to `<prefix>/bout` once, QoS 1 through the outbox,
/// sealed from `walking_bout` with a mark (`mqtt_bout_mark`, StoreSchema v5) as visits are from `visit`.
/// The payload is the BOUT event's fields with `key` (the device and the bout's start) and `device`.
extension FleetPayloads {
    static func bout(device: String, _ bout: StoredBout) -> (key: String, payload: String) {
        let key = "\(device)/\(Timestamp.string(bout.start))/bout"
        let event = BoutMessage(start: Timestamp.string(bout.start), end: Timestamp.string(bout.end), steps: bout.steps,
                                duration_s: (bout.end.timeIntervalSince(bout.start) * 1000).rounded() / 1000,
                                cadence_spm: bout.cadenceStepsPerMinute, stride_time_s: bout.gait.strideTimeSeconds,
                                stride_time_cv: bout.gait.strideTimeCV, regularity: bout.gait.regularity,
                                symmetry: bout.gait.symmetry, step_length_m: bout.gait.stepLengthMeters,
                                speed_mps: bout.gait.speedMetersPerSecond, placement: bout.placement)
        return (key, json(BoutRecordMessage(key: key, device: device, bout: event)))
    }
}

/// A bout as the fleet publishes it: `key` and `device`, then the BOUT event's fields.
struct BoutRecordMessage: Encodable {
    var key: String
    var device: String
    var bout: BoutMessage

    private enum CodingKeys: String, CodingKey { case key, device }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(device, forKey: .device)
        try bout.encodeFields(to: encoder)
    }
}

extension BoutMessage {
    /// The fields without `class`, into an encoder that already holds others.
    func encodeFields(to encoder: Encoder) throws {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(start, forKey: Key("start"))
        try c.encode(end, forKey: Key("end"))
        try c.encode(steps, forKey: Key("steps"))
        try c.encode(duration_s, forKey: Key("duration_s"))
        try c.encode(cadence_spm, forKey: Key("cadence_spm"))
        try c.encodeIfPresent(stride_time_s, forKey: Key("stride_time_s"))
        try c.encodeIfPresent(stride_time_cv, forKey: Key("stride_time_cv"))
        try c.encodeIfPresent(regularity, forKey: Key("regularity"))
        try c.encodeIfPresent(symmetry, forKey: Key("symmetry"))
        try c.encodeIfPresent(step_length_m, forKey: Key("step_length_m"))
        try c.encodeIfPresent(speed_mps, forKey: Key("speed_mps"))
        try c.encode(placement, forKey: Key("placement"))
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
