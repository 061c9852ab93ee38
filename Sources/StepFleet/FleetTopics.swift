import StepStore
/// The topics one device publishes under its prefix (default `stepd/<device id>`), as docs/fleet.md lists them.
public struct FleetTopics: Sendable, Equatable {
    public let prefix: String

    public init(prefix: String) {
        // A trailing slash would make every topic have an empty level ("stepd/a//steps").
        var trimmed = Substring(prefix)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        self.prefix = String(trimmed)
    }

    /// The default prefix for a device.
    public static func defaultPrefix(deviceID: String) -> String { "stepd/\(deviceID)" }

    /// Retained `online`/`offline`; `offline` is also the last will, which the broker publishes when the
    /// connection drops without a goodbye (power cut, kill -9, out of range).
    public var status: String { prefix + "/status" }
    /// Retained STEPS, while walking at most every `FleetPublisher.stepsIntervalSeconds`.
    public var steps: String { prefix + "/steps" }
    /// Retained POSITION on accepted fixes, at most every `FleetPublisher.positionIntervalSeconds`.
    public var position: String { prefix + "/position" }
    /// Arrival and departure of a visit, QoS 1 through the outbox.
    public var visit: String { prefix + "/visit" }
    /// A walking bout with its gait measures when it ends, QoS 1 through the outbox.
    public var bout: String { prefix + "/bout" }
    /// One message per finished minute, QoS 1 through the outbox: the durable record.
    public var minute: String { prefix + "/minute" }

    /// The topic of an outbox row's kind.
    public func topic(of kind: OutboxKind) -> String {
        switch kind {
        case .minute: return minute
        case .visit: return visit
        case .bout: return bout
        }
    }

    /// Whether `text` may be an MQTT topic to publish to: not empty, no wildcard, no NUL (MQTT 3.1.1, 4.7).
    public static func isValidTopic(_ text: String) -> Bool {
        !text.isEmpty && !text.contains("+") && !text.contains("#") && !text.contains("\0") && text.utf8.count < 65_536
    }

    /// Whether a device id can be one topic level and a Home Assistant object id: letters, digits, - and _.
    public static func isValidDeviceID(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }
    }
}
