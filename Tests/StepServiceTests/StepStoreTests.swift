import Foundation
import GRDB
import Logging
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProcessing
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The store against real SQLite files in a scratch folder.
final class StepStoreTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = "/tmp/stepd-store-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func makeStore(retentionDays: Int = 400) -> StepStore {
        var configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: Engine().stepHoldBackSeconds)
        configuration.retentionDays = retentionDays
        return StepStore(configuration: configuration)
    }

    private func date(_ iso: String) -> Date { ISO8601DateFormatter().date(from: iso)! }

    /// Foundation's rules for the zone, behind the LocalZone the daemon's code takes.
    private func calendar(_ zone: String) -> LocalZone { LocalZone(TimeZone(identifier: zone)!) }

    func testCountContinuesAfterReopen() throws {
        let since = Date(timeIntervalSince1970: 1_790_000_000)
        let first = makeStore()
        XCTAssertEqual(first.open(fresh: .init(steps: 0, since: since)), .init(steps: 0, since: since))
        for i in 1...5 { first.record(.step(count: i, time: Date(), distanceMeters: 0.7)) }
        // The counter keeps the distance of those steps, each step's own stride added up.
        let distance = (1...5).reduce(0.0) { sum, _ in sum + 0.7 }
        XCTAssertEqual(first.close(), .init(steps: 5, since: since, distanceMeters: distance))

        let second = makeStore()
        XCTAssertEqual(second.open(fresh: .init(steps: 0, since: Date())), .init(steps: 5, since: since, distanceMeters: distance))
        let bins = try second.history(from: Date().addingTimeInterval(-120), to: Date().addingTimeInterval(60), size: .minute)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.steps }, 5)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.distanceMeters }, 3.5, accuracy: 1e-9)
        second.close()
    }

    /// What a `kill -9` leaves: another connection sees the batch within a commit interval, without close().
    func testBatchReachesTheFileWithinACommitInterval() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.startCommitting()
        for i in 1...3 { store.record(.step(count: i, time: Date(), distanceMeters: 0.7)) }
        let reader = try DatabaseQueue(path: store.configuration.path)
        let deadline = Date().addingTimeInterval(store.configuration.commitIntervalSeconds + 0.5)
        var seen = 0
        while Date() < deadline, seen < 3 {
            seen = try reader.read { try Int.fetchOne($0, sql: "SELECT steps FROM counter") ?? 0 }
            usleep(20_000)  // poll interval of a wait for a state, not a fixed wait
        }
        XCTAssertEqual(seen, 3)
        XCTAssertEqual(try reader.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }, "wal")
        try reader.close()
        store.close()
    }

    /// A walk's writes (a batch of two steps every 0.67 s, as a buffered IIO source hands them, for 6 s) reach
    /// the file in a commit every second batch or so, not one per batch: each commit is a wake-up of the store's queue.
    /// And the last batch is in the file within the interval, with no later write to carry it (the backstop).
    func testAWalksWritesAreCoalescedRatherThanCommittedPerBatch() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.startCommitting()
        let opened = store.status.lastCommit
        var commits = Set<Date>()
        func look() { if let c = store.status.lastCommit, c != opened { commits.insert(c) } }
        var count = 0
        let start = Date()
        var batchTimes: [Date] = []
        for batch in 0..<9 {
            while Date() < start.addingTimeInterval(Double(batch) * 2 / 3) {
                look()
                usleep(5_000)  // the pace of the load or probe under test, not a wait for an event
            }
            batchTimes.append(Date())
            for _ in 0..<2 {
                count += 1
                store.record(.step(count: count, time: Date(), distanceMeters: 0.7))
            }
        }
        let lastWrite = Date()
        let reader = try DatabaseQueue(path: store.configuration.path)
        var saved = 0
        // Waits well past the interval so that a late commit fails with its figure rather than a time-out; the
        // bound is checked on the store's own commit time, not on when this loop's reads (slow under the thread
        // sanitizer beside other tests) happened to see it.
        while Date() < lastWrite.addingTimeInterval(store.configuration.commitIntervalSeconds + 8), saved < count {
            look()
            saved = try reader.read { try Int.fetchOne($0, sql: "SELECT steps FROM counter") ?? 0 }
            usleep(5_000)  // poll interval of a wait for a state, not a fixed wait
        }
        look()
        XCTAssertEqual(saved, count)
        let savedAfter = try XCTUnwrap(store.status.lastCommit).timeIntervalSince(lastWrite)
        XCTAssertLessThanOrEqual(savedAfter, store.configuration.commitIntervalSeconds + 0.5)
        // A batch finding the oldest write 0.9 s old drains: every second batch (the third's when the drain took
        // the second's last write before it came), four drains in 9 batches, then the backstop for what is left:
        // at most 5 commits, against 9 or more without coalescing. A batch this test itself sent later than the
        // early-drain age after the one before (a stall of the test's thread under load) may drain alone: one more.
        let lateBatches = zip(batchTimes, batchTimes.dropFirst())
            .filter { $1.timeIntervalSince($0) >= store.configuration.commitPolicy.earlyDrainSeconds }.count
        XCTAssertLessThanOrEqual(commits.count, 5 + lateBatches, "9 batches over 6 s, \(lateBatches) of them late, then the backstop")
        try reader.close()
        store.close()
    }

    /// EngineRecording: the engine's steps reach the store with the stride they carry, and a stop saves the count.
    func testEngineStepsAreRecordedWithTheirStride() throws {
        let engine = Engine()
        let configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: engine.stepHoldBackSeconds)
        let store = StepStore(configuration: configuration)
        EngineRecording.start(engine: engine, store: store, logger: Logger(label: "test"))
        // 20 s of walking at 1.8 steps a second, as in EngineStallTests.
        engine.receive(stride(from: 0.0, to: 20, by: 0.01).map { t in
            Sample(time: t, x: 0.3, y: 0.2, z: 9.81 + 3 * sin(2 * .pi * 1.8 * t))
        })
        engine.drain()
        let counted = engine.snapshot
        XCTAssertGreaterThan(counted.steps, 20)
        XCTAssertEqual(store.close()?.steps, counted.steps)
        let reopened = StepStore(configuration: configuration)
        _ = reopened.open(fresh: .init(steps: 0, since: Date()))
        let bins = try reopened.history(from: Date().addingTimeInterval(-600), to: Date().addingTimeInterval(60), size: .hour)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.steps }, counted.steps)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.distanceMeters }, Double(counted.steps) * counted.strideMeters, accuracy: 1e-6)
        reopened.close()
    }

    func testResetZeroesTheCounterAndKeepsHistory() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.record(.step(count: 1, time: Date(), distanceMeters: 0.7))
        store.record(.step(count: 2, time: Date(), distanceMeters: 0.7))
        let resetAt = Date()
        store.record(.reset(since: resetAt))
        store.record(.step(count: 1, time: Date(), distanceMeters: 0.7))
        XCTAssertEqual(store.close(), .init(steps: 1, since: resetAt, distanceMeters: 0.7), "the distance starts again at the reset")
        let reopened = makeStore()
        XCTAssertEqual(reopened.open(fresh: .init(steps: 0, since: Date())).steps, 1)
        let bins = try reopened.history(from: Date().addingTimeInterval(-3600), to: Date().addingTimeInterval(60), size: .hour)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.steps }, 3)
        reopened.close()
    }

    /// A bout is counted once confirmed, its first steps with their own earlier times: those counted after a
    /// reset belong to the new period, so that a history from `since` sums to what STEPS says.
    func testStepsOfABoutThatBeganJustBeforeAResetAreBinnedFromTheReset() throws {
        // A whole hour of yesterday: the reopened store keeps it (400 days), whatever day the test runs on.
        let resetAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 3600).rounded(.down) * 3600 - 86_400)
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: resetAt.addingTimeInterval(-3600)))
        store.record(.reset(since: resetAt))
        store.record(.step(count: 1, time: resetAt.addingTimeInterval(-3), distanceMeters: 0.7))  // held back 3 s
        store.record(.step(count: 2, time: resetAt.addingTimeInterval(1), distanceMeters: 0.7))
        store.record(.step(count: 3, time: resetAt.addingTimeInterval(-1800), distanceMeters: 0.7))  // a clock set back
        XCTAssertEqual(store.close()?.steps, 3)
        let reopened = makeStore()
        _ = reopened.open(fresh: .init(steps: 0, since: Date()))
        let fromReset = try reopened.history(from: resetAt, to: resetAt.addingTimeInterval(120), size: .minute)
        XCTAssertEqual(fromReset.reduce(0) { $0 + $1.steps }, 2)
        XCTAssertEqual(fromReset.first?.start, resetAt)
        let before = try reopened.history(from: resetAt.addingTimeInterval(-3600), to: resetAt, size: .hour)
        XCTAssertEqual(before.reduce(0) { $0 + $1.steps }, 1)
        reopened.close()
    }

    func testFloorsAddUpPerMinuteAndStayAbsentWithoutABarometer() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.record(.step(count: 1, time: date("2026-06-01T10:00:10Z"), distanceMeters: 1))
        store.record(.floors(added: .init(ascended: 1, descended: 0), total: .init(ascended: 1, descended: 0),
                             time: date("2026-06-01T10:01:10Z")))
        store.record(.floors(added: .init(ascended: 2, descended: 0), total: .init(ascended: 3, descended: 0),
                             time: date("2026-06-01T10:01:50Z")))
        store.record(.floors(added: .init(ascended: 0, descended: 1), total: .init(ascended: 3, descended: 1),
                             time: date("2026-06-01T10:02:30Z")))
        let bins = try store.history(from: date("2026-06-01T10:00:00Z"), to: date("2026-06-01T10:03:00Z"), size: .minute)
        XCTAssertEqual(bins.map(\.floors), [nil, 3], "bins keep the floors climbed; a descent makes no bin")
        store.close()
    }

    /// Floors up and down since the last reset are in the counter, so that a restart goes on from them as it
    /// goes on from the steps; a reset starts them again (none until a barometer counts).
    func testFloorsSinceTheResetSurviveAReopen() throws {
        let since = Date(timeIntervalSince1970: 1_790_000_000)
        let first = makeStore()
        _ = first.open(fresh: .init(steps: 0, since: since))
        first.record(.step(count: 1, time: Date(), distanceMeters: 0.7))
        first.record(.floors(added: .init(ascended: 3, descended: 0), total: .init(ascended: 3, descended: 0), time: Date()))
        first.record(.floors(added: .init(ascended: 0, descended: 2), total: .init(ascended: 3, descended: 2), time: Date()))
        first.record(.step(count: 2, time: Date(), distanceMeters: 0.7))
        let saved = StepStore.Counter(steps: 2, since: since, distanceMeters: 1.4, floors: .init(ascended: 3, descended: 2))
        XCTAssertEqual(first.close(), saved)

        let second = makeStore()
        XCTAssertEqual(second.open(fresh: .init(steps: 0, since: Date())), saved)
        let resetAt = Date()
        second.record(.reset(since: resetAt))
        XCTAssertEqual(second.close(), .init(steps: 0, since: resetAt))
        XCTAssertNil(makeStore().open(fresh: .init(steps: 0, since: Date())).floors, "no floors since the reset")
    }

    /// A history file written before the floors columns (schema v2) is migrated on open, its count kept.
    func testAVersionTwoFileGainsTheFloorsColumns() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = makeStore().configuration.path
        let old = try DatabaseQueue(path: path)
        try StoreSchema.migrator.migrate(old, upTo: "v2: MQTT outbox and the last minute queued")
        try old.write { db in
            try db.execute(sql: "INSERT INTO counter (id, steps, since, updated) VALUES (1, 42, 1790000000, 1790000000)")
        }
        try old.close()
        let store = makeStore()
        let counter = store.open(fresh: .init(steps: 0, since: Date()))
        XCTAssertEqual(counter, .init(steps: 42, since: Date(timeIntervalSince1970: 1_790_000_000)))
        store.record(.floors(added: .init(ascended: 1, descended: 0), total: .init(ascended: 1, descended: 0), time: Date()))
        XCTAssertEqual(store.close()?.floors, .init(ascended: 1, descended: 0))
        XCTAssertEqual(makeStore().open(fresh: .init(steps: 0, since: Date())).floors, .init(ascended: 1, descended: 0))
    }

    /// EngineRecording: a restart shows the floors saved once this run's barometer gives its first reading.
    func testTheEngineGoesOnFromTheSavedFloors() throws {
        let first = makeStore()
        _ = first.open(fresh: .init(steps: 0, since: Date()))
        first.record(.floors(added: .init(ascended: 3, descended: 2), total: .init(ascended: 3, descended: 2), time: Date()))
        first.close()

        let engine = Engine()
        let store = makeStore()
        EngineRecording.start(engine: engine, store: store, logger: Logger(label: "test"))
        XCTAssertEqual(engine.snapshot.floorsAscended, 3, "the saved floors show at once, before the barometer is known")
        engine.receive(pressure: PressureReading(time: 1, kilopascal: 100.5))
        engine.drain()
        XCTAssertEqual(engine.snapshot.floorsAscended, 3)
        XCTAssertEqual(engine.snapshot.floorsDescended, 2)
        XCTAssertEqual(store.close()?.floors, .init(ascended: 3, descended: 2))
    }

    func testPruningDropsWhatIsOlderThanTheRetention() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.record(.step(count: 1, time: Date().addingTimeInterval(-3 * 86_400), distanceMeters: 1))
        store.record(.step(count: 2, time: Date(), distanceMeters: 1))
        store.record(.trackPoint(StoredTrackPoint(time: Date().addingTimeInterval(-3 * 86_400), latitudeDegrees: 48, longitudeDegrees: 11, mode: "3d")))
        store.close()
        let pruned = makeStore(retentionDays: 2)
        _ = pruned.open(fresh: .init(steps: 0, since: Date()))
        let bins = try pruned.history(from: Date().addingTimeInterval(-5 * 86_400), to: Date().addingTimeInterval(60), size: .day)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.steps }, 1)
        XCTAssertEqual(try pruned.trackPoints(from: .distantPast, to: .distantFuture), [])
        pruned.close()
    }

    func testTrackPointsAndVisitsRoundTrip() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        let point = StoredTrackPoint(time: date("2026-06-01T10:00:00Z"), latitudeDegrees: 48.137, longitudeDegrees: 11.575,
                                     altitudeMSLMeters: 519.5, ephMeters: 4.2, mode: "3d", satellitesUsed: 9)
        store.record(.trackPoint(point))
        var visit = StoredVisit(arrival: date("2026-06-01T10:05:00Z"), departure: nil, latitudeDegrees: 48.1,
                                longitudeDegrees: 11.5, radiusMeters: 20, fixCount: 300)
        store.record(.visit(visit))
        XCTAssertEqual(try store.visits(from: date("2026-06-01T00:00:00Z"), to: date("2026-06-02T00:00:00Z")), [visit])
        visit.departure = date("2026-06-01T11:00:00Z")
        visit.fixCount = 3600
        store.record(.visit(visit))
        XCTAssertEqual(try store.trackPoints(from: date("2026-06-01T00:00:00Z"), to: date("2026-06-02T00:00:00Z")), [point])
        XCTAssertEqual(try store.visits(from: date("2026-06-01T00:00:00Z"), to: date("2026-06-02T00:00:00Z")), [visit])
        store.close()
    }

    func testCorruptDatabaseIsAStateNotACrash() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let garbage = Data(repeating: 0x5A, count: 8192)
        let store = makeStore()
        XCTAssertTrue(FileManager.default.createFile(atPath: store.configuration.path, contents: garbage))
        let fresh = StepStore.Counter(steps: 0, since: Date())
        XCTAssertEqual(store.open(fresh: fresh), fresh)
        XCTAssertEqual(store.status.state, "failed")
        let error = try XCTUnwrap(store.status.error)
        XCTAssertTrue(error.contains(store.configuration.path) && error.contains("not a database"), error)
        store.startCommitting()
        store.record(.step(count: 1, time: Date(), distanceMeters: 1))
        XCTAssertThrowsError(try store.history(from: Date().addingTimeInterval(-60), to: Date(), size: .minute)) {
            // A failed store, not one merely unavailable: clients get store_failed.
            guard case StoreError.failed = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(($0 as? StoreError)?.code, .storeFailed)
        }
        XCTAssertNil(store.close())
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: store.configuration.path)), garbage, "never overwritten")
    }

    func testStateDirectoryThatIsAFileIsReported() throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: directory, contents: Data("x".utf8)))
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        XCTAssertEqual(store.status.state, "failed")
        XCTAssertTrue(store.status.error?.hasPrefix("cannot create the state directory \(directory!)") ?? false,
                      store.status.error ?? "")
        XCTAssertNil(store.close())
    }

    func testRangesAreChecked() {
        let now = Date()
        XCTAssertThrowsError(try HistoryBinning.validate(from: now, to: now, size: .day))
        XCTAssertThrowsError(try HistoryBinning.validate(from: now.addingTimeInterval(-8 * 86_400), to: now, size: .minute)) {
            XCTAssertEqual($0 as? StoreError, .rangeTooLong(bin: .minute, maximumDays: 7))
        }
        XCTAssertNoThrow(try HistoryBinning.validate(from: now.addingTimeInterval(-400 * 86_400), to: now, size: .day))
        XCTAssertThrowsError(try HistoryBinning.validate(from: now.addingTimeInterval(-93 * 86_400), to: now, size: .hour))
    }

    /// Autumn in Berlin: 02:00–03:00 happens twice, and each is an hour bin of its own.
    func testRepeatedHourIsTwoBins() {
        let berlin = calendar("Europe/Berlin")
        let hours = HistoryBinning.intervals(from: date("2026-10-25T01:30:00+02:00"), to: date("2026-10-25T04:00:00+01:00"),
                                             size: .hour, zone: berlin)
        XCTAssertEqual(hours.map(\.start), [date("2026-10-25T01:00:00+02:00"), date("2026-10-25T02:00:00+02:00"),
                                            date("2026-10-25T02:00:00+01:00"), date("2026-10-25T03:00:00+01:00")])
        XCTAssertTrue(hours.allSatisfy { $0.duration == 3600 })
        let days = HistoryBinning.intervals(from: date("2026-10-24T12:00:00+02:00"), to: date("2026-10-26T00:00:01+01:00"),
                                            size: .day, zone: berlin)
        XCTAssertEqual(days.map(\.duration), [24 * 3600, 25 * 3600, 24 * 3600])
    }
}
