import Foundation
import StepProtocol
import StepStore

/// The JSON the daemon publishes: the protocol's own messages and field names (docs/fleet.md).
enum FleetPayloads {
    static func json<T: Encodable>(_ message: T) -> String {
        var line = Wire.line(message)
        line.removeLast()  // the protocol's newline; an MQTT payload is one message already
        return String(decoding: line, as: UTF8.self)
    }

    /// A subscriber drops a duplicate by this: the same device and minute make the same key.
    static func minuteKey(device: String, minute: Int64) -> String {
        "\(device)/\(Timestamp.string(Date(timeIntervalSince1970: Double(minute) * 60)))"
    }

    /// A minute bin (Unix minute `minute`), rounded as history rounds it: a finished one, or at a clean stop one
    /// not yet finished (`partial`), which the finished one replaces under the same key.
    static func minute(device: String, minute: Int64, steps: Int, distanceMeters: Double, floors: Int?,
                       partial: Bool = false) -> (key: String, payload: String) {
        let start = Date(timeIntervalSince1970: Double(minute) * 60)
        let key = minuteKey(device: device, minute: minute)
        let message = MinuteRecordMessage(key: key, device: device, start: Timestamp.string(start),
                                          end: Timestamp.string(start.addingTimeInterval(60)), steps: steps,
                                          distance_m: (distanceMeters * 1000).rounded() / 1000, floors: floors,
                                          partial: partial ? true : nil)
        return (key, json(message))
    }

    /// A visit's arrival (no departure yet) or departure.
    static func visit(device: String, _ visit: VisitMessage) -> (key: String, payload: String) {
        let event = visit.departure == nil ? "arrival" : "departure"
        let key = "\(device)/\(visit.arrival)/\(event)"
        return (key, json(VisitRecordMessage(key: key, device: device, event: event, visit: visit)))
    }

    static let online = "online"
    static let offline = "offline"
}

extension StepStore.OutboxEncoder {
    /// The messages above, for what the store seals into the outbox.
    static func payloads(device: String) -> Self {
        Self(minute: { minute, steps, distance, floors in
                 FleetPayloads.minute(device: device, minute: minute, steps: steps, distanceMeters: distance, floors: floors)
             },
             visit: { visit in FleetPayloads.visit(device: device, LocationWire.visit(visit.visit)) },
             bout: { bout in FleetPayloads.bout(device: device, bout) })
    }

    /// Minutes not yet finished, as a clean stop sends them.
    static func partialPayloads(device: String) -> Self {
        Self(minute: { minute, steps, distance, floors in
                 FleetPayloads.minute(device: device, minute: minute, steps: steps, distanceMeters: distance, floors: floors, partial: true)
             },
             visit: { visit in FleetPayloads.visit(device: device, LocationWire.visit(visit.visit)) },
             bout: { bout in FleetPayloads.bout(device: device, bout) })
    }
}
