import Foundation

/// One row of the outbox: a message stored before it is sent, removed when the broker acknowledges it.
/// `id` orders the rows (SQLite's AUTOINCREMENT: never reused), so they leave in the order they were made.
public struct OutboxRow: Sendable, Equatable {
    public var id: Int64
    public var kind: OutboxKind
    public var key: String
    /// The record's own time (a minute's start, a visit's arrival or departure): what retention goes by.
    public var time: Date
    public var payload: String

    public init(id: Int64, kind: OutboxKind, key: String, time: Date, payload: String) {
        self.id = id
        self.kind = kind
        self.key = key
        self.time = time
        self.payload = payload
    }
}

/// What an outbox row carries.
public enum OutboxKind: String, Sendable, CaseIterable {
    case minute
    case visit
    case bout
}
