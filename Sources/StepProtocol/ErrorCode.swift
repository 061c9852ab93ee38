/// What an ERROR is about, stable across releases so that a client decides on it rather than on the message's
/// words (docs/protocol.md "Errors" lists when each is sent). A new code may come with a new `proto_minor`; a
/// client treats one it does not know as a failure of the request.
public enum ErrorCode: String, CaseIterable, Codable, Sendable {
    /// The line is not a request: not JSON, not an object, no `cmd`, nested too deep, a field of the wrong
    /// type or value, a range whose `from` is not before its `to`.
    case badRequest = "bad_request"
    /// `cmd` names no command of this protocol.
    case unknownCommand = "unknown_command"
    /// The request line is longer than the daemon reads; it was discarded.
    case tooLong = "too_long"
    /// The request needs a privilege this client lacks (`reset` by someone else than root, the daemon's
    /// user or its admin group).
    case notPermitted = "not_permitted"
    /// The range asks for more than one request answers (more days than the bin allows, more rows than the
    /// limit): ask for a shorter one or coarser bins.
    case rangeTooLong = "range_too_long"
    /// The connection is refused because the daemon, or this user's share of it, is full; it is closed.
    case tooManyClients = "too_many_clients"
    /// The client is closed for leaving the daemon's replies unread.
    case notReading = "not_reading"
    /// History, track and visits from the store cannot be read now: no state directory, the store still
    /// opening, the daemon stopping. Live counting goes on.
    case unavailable
    /// The history store has failed (its file deleted, the disk full or damaged); STATUS's `store` says why.
    /// Live counting goes on in memory.
    case storeFailed = "store_failed"
    /// A fault of the daemon's own.
    case `internal`
}

/// An error the daemon sends as an ERROR: its code, and its `description` as the message.
public protocol CodedError: Error, CustomStringConvertible {
    var code: ErrorCode { get }
}
