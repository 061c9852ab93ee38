import Foundation
import GRDB
import Locking
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The store's fault handling against real SQLite files: a damaged write-ahead log is told from a torn tail,
/// and a store that comes back after counting began adds the count it saved rather than writing over it.
final class StepStoreFaultTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = "/tmp/stepd-store-fault-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A WAL of several commits, copied while its connection is open (as a crash leaves it).
    private func walWithCommits(_ count: Int) throws -> (wal: [UInt8], pageSize: Int) {
        let path = directory + "/source.sqlite"
        var config = Configuration()
        config.journalMode = .wal
        let db = try DatabasePool(path: path, configuration: config)
        try db.write { try $0.execute(sql: "CREATE TABLE t (n INTEGER)") }
        for n in 0..<count { try db.write { try $0.execute(sql: "INSERT INTO t VALUES (?)", arguments: [n]) } }
        let wal = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "-wal")))
        try db.close()
        let pageSize = Int(wal[8]) << 24 | Int(wal[9]) << 16 | Int(wal[10]) << 8 | Int(wal[11])
        return (wal, pageSize)
    }

    private func damage(of bytes: [UInt8]) throws -> String? {
        let path = directory + "/copy-wal"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return WriteAheadLog.damage(at: path)
    }

    /// Foundation's sentences ("You don’t have permission.") become clauses: the messages that go on after
    /// the reason ("; counting goes on in memory", "; the track starts afresh") read as one sentence.
    func testAFoundationReasonLosesItsFullStopInsideAMessage() {
        let reason = StepStore.reason(CocoaError(.fileWriteNoPermission))
        XCTAssertFalse(reason.isEmpty)
        XCTAssertFalse(reason.hasSuffix("."), reason)
        let message = StoreError.cannotWrite(path: "/var/lib/stepd/stepd.sqlite", reason: reason).description
        XCTAssertFalse(message.contains(".;"), message)
        XCTAssertTrue(message.hasSuffix("; counting goes on in memory"), message)
    }

    func testSoundLogAndTornTailAreNotDamage() throws {
        let (wal, pageSize) = try walWithCommits(5)
        XCTAssertNil(try damage(of: wal))
        // A crash in the middle of writing the last frame: SQLite drops that transaction, as it should.
        XCTAssertNil(try damage(of: Array(wal.prefix(wal.count - pageSize / 2))))
        var lastTorn = wal
        for i in (wal.count - 100)..<wal.count { lastTorn[i] ^= 0xFF }
        XCTAssertNil(try damage(of: lastTorn))
        XCTAssertNil(WriteAheadLog.damage(at: directory + "/absent-wal"))
    }

    func testFrameFailingWithFramesAfterItIsDamage() throws {
        let (wal, pageSize) = try walWithCommits(5)
        let frames = (wal.count - 32) / (24 + pageSize)
        var bytes = wal
        let secondPage = 32 + (24 + pageSize) + 24
        bytes[secondPage + 10] ^= 0x01
        XCTAssertEqual(try damage(of: bytes), "frame 2 of \(frames) fails its checksum, and the \(frames - 2) written after it would be dropped")
        var header = wal
        header[20] ^= 0x01   // salt-2: the header's own checksum fails
        XCTAssertEqual(try damage(of: header), "its header is damaged; SQLite would ignore every frame")
        XCTAssertEqual(try damage(of: [UInt8](repeating: 0x42, count: 4096)), "not an SQLite write-ahead log")
    }

    /// A store that could not be opened at start counts from `fresh`; when it opens, the saved count is handed
    /// to the owner (who adds it to STEPS), and what comes back is written, with the minutes of both runs.
    func testStoreUnavailableAtStartHandsTheSavedCountOverOnRecovery() throws {
        var configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: Engine().stepHoldBackSeconds)
        configuration.reopenIntervalSeconds = 0.1
        let since = Date(timeIntervalSince1970: 1_790_000_000)
        let first = StepStore(configuration: configuration)
        _ = first.open(fresh: .init(steps: 0, since: since))
        for i in 1...341 { first.record(.step(count: i, time: Date(), distanceMeters: 0.5)) }
        XCTAssertEqual(first.close(), .init(steps: 341, since: since, distanceMeters: 170.5))

        // The database hidden (a card not mounted yet): counting starts from 0.
        let path = configuration.path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            XCTAssertEqual(rename(path + suffix, path + suffix + ".away"), 0)
        }
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 4096))
        let second = StepStore(configuration: configuration)
        let start = Date()
        XCTAssertEqual(second.open(fresh: .init(steps: 0, since: start)), .init(steps: 0, since: start))
        XCTAssertEqual(second.status.state, "failed")
        let handed = NIOLockedBox<StepStore.Counter?>(nil)
        second.onSavedCounter = { saved in
            handed.set(saved)
            second.record(.counter(.init(steps: saved.steps + 68, since: saved.since, distanceMeters: saved.distanceMeters + 34)))
        }
        second.startCommitting()
        for i in 1...68 { second.record(.step(count: i, time: Date(), distanceMeters: 0.5)) }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix + ".away") {
            XCTAssertEqual(rename(path + suffix + ".away", path + suffix), 0)
        }
        let deadline = Date().addingTimeInterval(10)
        while handed.get() == nil, Date() < deadline { usleep(20_000) }  // poll interval of a wait for a state, not a fixed wait
        XCTAssertEqual(handed.get(), .init(steps: 341, since: since, distanceMeters: 170.5))
        XCTAssertEqual(second.close(), .init(steps: 409, since: since, distanceMeters: 204.5), "never the 68 alone, never 341 alone")
        let third = StepStore(configuration: configuration)
        XCTAssertEqual(third.open(fresh: .init(steps: 0, since: Date())), .init(steps: 409, since: since, distanceMeters: 204.5))
        let bins = try third.history(from: Date().addingTimeInterval(-600), to: Date().addingTimeInterval(60), size: .hour)
        XCTAssertEqual(bins.reduce(0) { $0 + $1.steps }, 409)
        third.close()
    }

    /// The same, with the stop coming before the store's next attempt to open: the stop tries once more and
    /// makes the sum itself (the owner's answer would come after the last commit), so the count is saved.
    func testStopBeforeTheNextReopenStillAddsAndSavesTheCount() throws {
        var configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: Engine().stepHoldBackSeconds)
        configuration.reopenIntervalSeconds = 3600
        let since = Date(timeIntervalSince1970: 1_790_000_000)
        let first = StepStore(configuration: configuration)
        _ = first.open(fresh: .init(steps: 0, since: since))
        for i in 1...341 { first.record(.step(count: i, time: Date(), distanceMeters: 0.5)) }
        XCTAssertEqual(first.close(), .init(steps: 341, since: since, distanceMeters: 170.5))

        let path = configuration.path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            XCTAssertEqual(rename(path + suffix, path + suffix + ".away"), 0)
        }
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 4096))
        let second = StepStore(configuration: configuration)
        let start = Date()
        XCTAssertEqual(second.open(fresh: .init(steps: 0, since: start)), .init(steps: 0, since: start))
        second.onSavedCounter = { _ in XCTFail("the owner is not asked during the stop") }
        second.startCommitting()
        for i in 1...68 { second.record(.step(count: i, time: Date(), distanceMeters: 0.5)) }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix + ".away") {
            XCTAssertEqual(rename(path + suffix + ".away", path + suffix), 0)
        }
        XCTAssertEqual(second.close(), .init(steps: 409, since: since, distanceMeters: 204.5))
        let third = StepStore(configuration: configuration)
        XCTAssertEqual(third.open(fresh: .init(steps: 0, since: Date())), .init(steps: 409, since: since, distanceMeters: 204.5))
        third.close()
    }

    /// The pool is closed only when no read holds it: a read running when the store gives the pool up is
    /// interrupted and returns its lease, and only then is the pool closed; a lease still held after the wait
    /// keeps the pool open (and usable by its holder) until it is returned.
    func testRetiredPoolIsClosedOnlyOnceNoReadHoldsIt() throws {
        var config = Configuration()
        config.journalMode = .wal
        let leases = DatabaseLeases()
        leases.install(try DatabasePool(path: directory + "/leases.sqlite", configuration: config))

        // A read that would take minutes: a recursive count to 10^10.
        let pool = try XCTUnwrap(leases.lease())
        let finished = DispatchSemaphore(value: 0)
        let outcome = NIOLockedBox<Error?>(nil)
        // The query says when it runs: an interrupt reaches only a statement that has begun.
        let running = DispatchSemaphore(value: 0)
        let told = Locked(false)
        let runningSignal = DatabaseFunction("read_running", argumentCount: 1, pure: false) { _ in
            if !told.withLock({ let was = $0; $0 = true; return was }) { running.signal() }
            return 1
        }
        DispatchQueue.global().async {
            defer { leases.release(); finished.signal() }
            do {
                _ = try pool.read { db in
                    db.add(function: runningSignal)
                    return try Int.fetchOne(db, sql: "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1e10) SELECT count(*) FROM c WHERE read_running(n)")
                }
            } catch { outcome.set(error) }
        }
        XCTAssertEqual(running.wait(timeout: .now() + 30), .success, "the long read to run")
        XCTAssertEqual(try leases.retire(waitingUpTo: 10), true, "the running read is interrupted and returns its lease")
        XCTAssertEqual(finished.wait(timeout: .now() + 5), .success)
        XCTAssertEqual((outcome.get() as? DatabaseError)?.resultCode, .SQLITE_INTERRUPT, "\(String(describing: outcome.get()))")
        XCTAssertNil(leases.lease(), "no lease once the pool is given up")

        let second = try DatabasePool(path: directory + "/leases.sqlite", configuration: config)
        leases.install(second)
        let held = try XCTUnwrap(leases.lease())
        XCTAssertEqual(try leases.retire(waitingUpTo: 0.1), false, "a lease still held keeps the pool open")
        XCTAssertTrue(leases.isRevoked)
        XCTAssertNil(leases.lease())
        XCTAssertEqual(try held.read { try Int.fetchOne($0, sql: "SELECT 42") }, 42, "the holder's pool is still open")
        leases.release()
        XCTAssertEqual(try leases.retire(waitingUpTo: 0), true)
        XCTAssertThrowsError(try second.read { try Int.fetchOne($0, sql: "SELECT 1") }, "closed")
    }
}

/// A value shared with a callback on another queue.
private final class NIOLockedBox<T: Sendable>: Sendable {
    private let value: Locked<T>
    init(_ value: T) { self.value = Locked(value) }
    func get() -> T { value.withLock { $0 } }
    func set(_ newValue: T) { value.withLock { $0 = newValue } }
}
