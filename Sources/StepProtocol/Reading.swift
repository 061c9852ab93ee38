import Foundation

/// A message the daemon sends, named by its `class` (the first field of every line). A client reads a line's
/// `MessageHead` first, then decodes the type its class names.
public protocol DaemonMessage: Codable {
    static var messageClass: String { get }
}

extension VersionMessage: DaemonMessage {}
extension ErrorMessage: DaemonMessage {}
extension StatusMessage: DaemonMessage {}
extension StepsMessage: DaemonMessage {}
extension StepMessage: DaemonMessage {}
extension ActivityMessage: DaemonMessage {}
extension MotionMessage: DaemonMessage {}
extension WatchMessage: DaemonMessage {}
extension HistoryMessage: DaemonMessage {}
extension PositionMessage: DaemonMessage {}
extension TrackMessage: DaemonMessage {}
extension VisitMessage: DaemonMessage {}
extension VisitsMessage: DaemonMessage {}

/// What every line from the daemon has: its class, and for a reply the request's `id`.
public struct MessageHead: Decodable, Sendable {
    public var `class`: String
    public var id: JSONValue?

    /// nil for a line that is not a JSON object with a `class`.
    public init?(line: Data) {
        guard let head = try? JSONDecoder().decode(MessageHead.self, from: line) else { return nil }
        self = head
    }
}

/// An event pushed to a watcher (docs/protocol.md, `watch`), by its class.
public enum DaemonEvent: Sendable {
    case step(StepMessage)
    /// A STEPS message with the class PEDOMETER.
    case pedometer(StepsMessage)
    case activity(ActivityMessage)
    case motion(MotionMessage)
    case position(PositionMessage)
    case visit(VisitMessage)
    case bout(BoutMessage)

    /// nil for a line whose class is not an event's; throws when the class is one but the fields do not fit.
    public init?(line: Data) throws {
        guard let head = MessageHead(line: line) else { return nil }
        let decoder = JSONDecoder()
        switch head.class {
        case StepMessage.messageClass: self = .step(try decoder.decode(StepMessage.self, from: line))
        case WatchClass.pedometer.rawValue: self = .pedometer(try decoder.decode(StepsMessage.self, from: line))
        case ActivityMessage.messageClass: self = .activity(try decoder.decode(ActivityMessage.self, from: line))
        case MotionMessage.messageClass: self = .motion(try decoder.decode(MotionMessage.self, from: line))
        case PositionMessage.messageClass: self = .position(try decoder.decode(PositionMessage.self, from: line))
        case VisitMessage.messageClass: self = .visit(try decoder.decode(VisitMessage.self, from: line))
        case BoutMessage.messageClass: self = .bout(try decoder.decode(BoutMessage.self, from: line))
        default: return nil
        }
    }
}

/// A request as a client sends it: `cmd`, `id` when given, and the other fields.
extension Request: Encodable {
    public func encode(to encoder: Encoder) throws {
        var object = fields
        object["cmd"] = .string(command.rawValue)
        object["id"] = id
        try JSONValue.object(object).encode(to: encoder)
    }
}
