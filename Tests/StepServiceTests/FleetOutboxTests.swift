import Foundation
import GRDB
import Locking
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProtocol
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The MQTT outbox in a real store (Fleet/StepStore+Outbox.swift): what goes in, once and in order, from the
/// store's own minute bins and visits; what leaves (acknowledged rows, rows older than the retention); and that a
/// visit in history reaches the outbox even when the daemon stopped before its publisher heard of it.
final class FleetOutboxTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for directory in directories { try? FileManager.default.removeItem(atPath: directory) }
    }

    private func makeStore(directory: String? = nil, retentionDays: Int = 400) -> StepStore {
        let directory = directory ?? NSTemporaryDirectory() + "stepd-outbox-\(UUID().uuidString.prefix(6))"
        directories.append(directory)
        var configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: 10)
        configuration.retentionDays = retentionDays
        let store = StepStore(configuration: configuration)
        _ = store.open(fresh: .init(steps: 0, since: Date().addingTimeInterval(-600)))
        return store
    }

    /// Calls a store method that completes on its queue, and returns what it completed with.
    private func wait<T: Sendable>(_ call: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) throws -> T {
        let result = Completion<T>()
        let done = DispatchSemaphore(value: 0)
        call { r in
            result.value.withLock { $0 = r }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        return try XCTUnwrap(result.value.withLock { $0 }).get()
    }

    private let encoder = StepStore.OutboxEncoder.payloads(device: "t")

    private func seal(_ store: StepStore, through minute: Int64) throws -> StepStore.Sealing {
        try wait { store.sealOutbox(through: minute, encoder: encoder, completion: $0) }
    }

    private func rows(_ store: StepStore) throws -> [OutboxRow] {
        try wait { store.outboxRows(after: 0, limit: 100, completion: $0) }
    }

    private func minute(of date: Date) -> Int64 { PendingWrites.minute(of: date) }

    /// Now in whole seconds: a time read back from the database then makes the same millisecond key.
    private var now: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    private func visit(arrival: Date, departure: Date?) -> StoredVisit {
        StoredVisit(arrival: arrival, departure: departure, latitudeDegrees: 51.75, longitudeDegrees: -1.25, radiusMeters: 12.5,
                    fixCount: 40)
    }

    /// Finished minutes go in once, in order, with their keys, and leave only when removed (acknowledged); the
    /// mark keeps a minute from going in twice across restarts.
    func testOutboxSealsEachFinishedMinuteOnceAndKeepsRowsUntilRemoved() throws {
        let store = makeStore()
        let minute = minute(of: Date())
        for (offset, count) in [(-5, 3), (-4, 2), (-2, 4)] {
            for i in 0..<count {
                store.record(.step(count: i, time: Date(timeIntervalSince1970: Double(minute + Int64(offset)) * 60 + 1 + Double(i)), distanceMeters: 0.7))
            }
        }
        XCTAssertEqual(try wait { store.startOutbox(markingSentThrough: minute - 6, completion: $0) }, 0)
        XCTAssertEqual(try seal(store, through: minute - 3).added, 2)
        XCTAssertEqual(try seal(store, through: minute - 3).added, 0, "sealed once")
        // A later start does not move the mark back.
        XCTAssertEqual(try wait { store.startOutbox(markingSentThrough: minute - 1, completion: $0) }, 2)
        XCTAssertEqual(try seal(store, through: minute - 1).queued, 3)
        let rows = try rows(store)
        XCTAssertEqual(rows.map(\.key), [minute - 5, minute - 4, minute - 2].map { FleetPayloads.minuteKey(device: "t", minute: $0) })
        XCTAssertTrue(rows[0].payload.contains("\"steps\":3"), rows[0].payload)
        XCTAssertEqual(try wait { store.removeFromOutbox(ids: [rows[0].id], completion: $0) }, 2)
        XCTAssertEqual(try self.rows(store).map(\.id), [rows[1].id, rows[2].id])
        store.close()
    }

    /// The outbox is bounded by `retention_days`, as the history is: a seal drops the rows a broker gone for
    /// longer never acknowledged, and does not put in minutes or visits older than that; newer ones stay.
    func testOutboxDropsRowsOlderThanTheRetentionAndKeepsNewerOnes() throws {
        let store = makeStore(retentionDays: 1)
        let now = self.now
        let old = now.addingTimeInterval(-2 * 86_400), recent = now.addingTimeInterval(-3_600)
        // The mark three days back: the old minute would be due, were it not past the retention.
        XCTAssertEqual(try wait { store.startOutbox(markingSentThrough: minute(of: now) - 3 * 1_440, completion: $0) }, 0)
        // Rows queued in earlier runs while the broker was away, one of them from before the retention period.
        // Through the store's own write path: a write behind its back is a file changed by another program.
        try store.queue.sync {
            store.transaction { db in
                for (key, time) in [("t/old", old), ("t/recent", recent)] {
                    try db.execute(sql: "INSERT INTO mqtt_outbox (kind, key, time, payload) VALUES ('minute', ?, ?, '{}')",
                                   arguments: [key, time.timeIntervalSince1970])
                }
            }
        }.get()
        // History not yet pruned (that is hourly) from before and within the retention period.
        store.record(.step(count: 1, time: old, distanceMeters: 0.7))
        store.record(.step(count: 2, time: recent, distanceMeters: 0.7))
        store.record(.visit(visit(arrival: old, departure: old.addingTimeInterval(600))))
        store.record(.visit(visit(arrival: recent, departure: nil)))

        let sealing = try seal(store, through: minute(of: now) - 1)
        XCTAssertEqual(sealing.added, 2, "the recent minute and the recent arrival, nothing from before the retention")
        XCTAssertEqual(sealing.queued, 3)
        XCTAssertEqual(try rows(store).map(\.key), ["t/recent", FleetPayloads.minuteKey(device: "t", minute: minute(of: recent)),
                                                    "t/\(Timestamp.string(recent))/arrival"])
        store.close()
    }

    /// A visit committed to history reaches the outbox without the publisher: the daemon stopped (killed with -9,
    /// or cleanly) after the store recorded the visit and before anything was sealed, and the next run's seal
    /// takes it from `visit`'s rows. Then the departure, once; and an arrival sealed only after its departure
    /// still goes out as an arrival, first.
    func testAVisitInHistoryReachesTheOutboxAfterTheDaemonStoppedBeforeSealingIt() throws {
        let directory = NSTemporaryDirectory() + "stepd-outbox-\(UUID().uuidString.prefix(6))"
        let now = self.now
        let arrival = now.addingTimeInterval(-1_800)
        var first = makeStore(directory: directory)
        XCTAssertEqual(try wait { first.startOutbox(markingSentThrough: minute(of: now) - 1, completion: $0) }, 0)
        first.record(.visit(visit(arrival: arrival, departure: nil)))
        // In history (a read commits what is pending), not in the outbox; then the daemon is gone.
        XCTAssertEqual(try wait { first.visits(from: arrival, to: now, completion: $0) }.count, 1)
        XCTAssertEqual(try rows(first), [])
        first.close()

        first = makeStore(directory: directory)
        XCTAssertEqual(try wait { first.startOutbox(markingSentThrough: minute(of: now) - 1, completion: $0) }, 0)
        XCTAssertEqual(try seal(first, through: minute(of: now) - 1).added, 1)
        let arrivalKey = "t/\(Timestamp.string(arrival))/arrival"
        let queued = try rows(first)
        XCTAssertEqual(queued.map(\.key), [arrivalKey])
        XCTAssertEqual(queued.first?.kind, .visit)
        XCTAssertEqual(queued.first?.time.timeIntervalSince1970 ?? 0, arrival.timeIntervalSince1970, accuracy: 1e-3)
        // The arrival's message as the publisher would have made it from the engine's event (JSON's key order aside).
        let expected = FleetPayloads.visit(device: "t", LocationWire.visit(visit(arrival: arrival, departure: nil).visit)).payload
        XCTAssertEqual(try JSONSerialization.jsonObject(with: Data((queued.first?.payload ?? "").utf8)) as? NSDictionary,
                       try JSONSerialization.jsonObject(with: Data(expected.utf8)) as? NSDictionary)

        // The stay ends and another begins: the departure and the new arrival, in the order they happened, once.
        let departure = now.addingTimeInterval(-1_200), next = now.addingTimeInterval(-600)
        first.record(.visit(visit(arrival: arrival, departure: departure)))
        first.record(.visit(visit(arrival: next, departure: nil)))
        XCTAssertEqual(try seal(first, through: minute(of: now) - 1).added, 2)
        XCTAssertEqual(try seal(first, through: minute(of: now) - 1).added, 0, "sealed once")
        XCTAssertEqual(try rows(first).map(\.key), [arrivalKey, "t/\(Timestamp.string(arrival))/departure",
                                                    "t/\(Timestamp.string(next))/arrival"])
        XCTAssertTrue(try rows(first).dropFirst().first?.payload.contains("\"event\":\"departure\"") == true)
        first.close()

        // Killed during the stay before its arrival was sealed, started again after it was closed (EngineRecording
        // ends an open stay at its last point): the arrival goes out as an arrival, before the departure.
        let second = makeStore()
        XCTAssertEqual(try wait { second.startOutbox(markingSentThrough: minute(of: now) - 1, completion: $0) }, 0)
        second.record(.visit(visit(arrival: arrival, departure: nil)))
        XCTAssertEqual(try wait { second.visits(from: arrival, to: now, completion: $0) }.count, 1)
        second.record(.visit(visit(arrival: arrival, departure: departure)))
        XCTAssertEqual(try seal(second, through: minute(of: now) - 1).added, 2)
        let both = try rows(second)
        XCTAssertEqual(both.map(\.key), [arrivalKey, "t/\(Timestamp.string(arrival))/departure"])
        XCTAssertTrue(both.first?.payload.contains("\"departure\":null") == true, "\(both)")
        XCTAssertEqual(both.map { $0.time.timeIntervalSince1970.rounded() }, [arrival, departure].map(\.timeIntervalSince1970))
        second.close()
    }

    /// The first run with MQTT publishes from then on: visits already in history are not sent, as minutes are not.
    func testVisitsInHistoryBeforeTheOutboxFirstStartedAreNotSent() throws {
        let store = makeStore()
        let now = self.now
        store.record(.visit(visit(arrival: now.addingTimeInterval(-7_200), departure: now.addingTimeInterval(-3_600))))
        store.record(.visit(visit(arrival: now.addingTimeInterval(-1_800), departure: nil)))
        XCTAssertEqual(try wait { store.startOutbox(markingSentThrough: minute(of: now) - 1, completion: $0) }, 0)
        XCTAssertEqual(try seal(store, through: minute(of: now) - 1).added, 0)
        // The stay going on when MQTT was turned on: its departure is news, and is sent.
        store.record(.visit(visit(arrival: now.addingTimeInterval(-1_800), departure: now.addingTimeInterval(-60))))
        XCTAssertEqual(try seal(store, through: minute(of: now) - 1).added, 1)
        XCTAssertEqual(try rows(store).map(\.key), ["t/\(Timestamp.string(now.addingTimeInterval(-1_800)))/departure"])
        store.close()
    }
}

/// What a store call completed with, from its queue.
private final class Completion<T: Sendable>: Sendable {
    let value = Locked<Result<T, StoreError>?>(nil)
}
