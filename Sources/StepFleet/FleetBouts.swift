import Foundation
import StepProtocol
import StepStore

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
