import StepStore
/// Which outbox rows are on their way to the broker. Rows are sent in id order, at most `capacity` waiting
/// for their PUBACK at once, so a backlog of days drains without holding it all in memory or flooding a
/// broker. A new connection starts again from the oldest row not yet acknowledged: what was in flight when
/// the link dropped may have reached the broker or not, and sending it again is what QoS 1 means (the
/// subscriber drops the duplicate by its key). Pure: the publisher does the I/O.
struct OutboxWindow {
    let capacity: Int
    /// libmosquitto's message id → outbox row id, for the rows waiting for their PUBACK.
    private(set) var inFlight: [Int32: Int64] = [:]
    /// Rows read from the store and not yet sent, oldest first.
    private var fetched: [OutboxRow] = []
    private var head = 0
    /// The newest row id read from the store in this connection.
    private(set) var cursor: Int64 = 0
    /// The store has no row after `cursor` (as of the last read): no need to read until a row is added.
    private var exhausted = false
    private var reading = false
    /// Bumped at each connection: a read asked for in an earlier one is dropped when it comes back.
    private(set) var generation = 0

    init(capacity: Int) { self.capacity = capacity }

    /// A new connection: every row not acknowledged goes again, from the oldest.
    mutating func restart() {
        inFlight.removeAll()
        fetched.removeAll()
        head = 0
        cursor = 0
        exhausted = false
        reading = false
        generation += 1
    }

    /// How many rows to ask the store for (after `cursor`), or nil when no read is needed now.
    mutating func readRequest() -> Int? {
        guard !reading, !exhausted, head >= fetched.count, inFlight.count < capacity else { return nil }
        reading = true
        return capacity * 2
    }

    /// The rows a read returned: those after `cursor`, in id order, at most `limit`. Rows `skipping` names
    /// (acknowledged, their removal not yet in the store) are not sent again.
    mutating func received(_ rows: [OutboxRow], limit: Int, generation: Int, skipping: (Int64) -> Bool = { _ in false }) {
        guard generation == self.generation else { return }
        reading = false
        fetched = Array(fetched[head...]) + rows.filter { $0.id > cursor && !skipping($0.id) }
        head = 0
        if let last = rows.last { cursor = max(cursor, last.id) }
        exhausted = rows.count < limit
    }

    /// A read failed: nothing more is read until a row is added (the publisher retries on its timer).
    mutating func readFailed(generation: Int) {
        guard generation == self.generation else { return }
        reading = false
        exhausted = true
    }

    /// The store has a new row.
    mutating func rowAdded() { exhausted = false }

    /// The next row to publish, if the window has room.
    mutating func next() -> OutboxRow? {
        guard inFlight.count < capacity, head < fetched.count else { return nil }
        defer { head += 1 }
        return fetched[head]
    }

    /// `row` was handed to the client as message `messageID`.
    mutating func sent(_ row: OutboxRow, messageID: Int32) {
        inFlight[messageID] = row.id
    }

    /// `row` could not be handed over (the link just dropped): it goes first when sending resumes.
    mutating func unsent(_ row: OutboxRow) {
        if head > 0 && fetched[head - 1].id == row.id { head -= 1 } else { fetched.insert(row, at: head) }
    }

    /// The PUBACK of `messageID`: the row it carried, to remove from the store, or nil for a message that is
    /// not an outbox row of this connection (a retained status, or a resend of the previous connection).
    mutating func acknowledged(messageID: Int32) -> Int64? {
        inFlight.removeValue(forKey: messageID)
    }
}
