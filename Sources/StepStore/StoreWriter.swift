import Foundation
import GRDB
import StepProcessing

/// The GRDB side of the store: opens the SQLite file (WAL), writes batches, prunes, and notices a file that is
/// no longer the one at its path. It decides nothing about when (CommitPolicy) and reports every failure as a
/// StoreError for StepStore to publish. Used only on the store's queue (StoreCore); reads lease the
/// pool from `leases`, which closes it only when no read holds it.
final class StoreWriter {
    let directory: String
    let path: String
    let leases = DatabaseLeases()

    // Owned by the store's queue.
    private(set) var database: DatabasePool?
    private var identity: StoreFileIdentity?
    /// The file and its log as the last write left them.
    private var contents: StoreFileContents?
    /// A file refused for a value out of range, as it was left, and why: the retries every few seconds do not
    /// scan it again until it changes (a row mended, the file moved away).
    private var refused: (file: StoreFileIdentity?, contents: StoreFileContents, error: StoreError)?

    init(directory: String, path: String) {
        self.directory = directory
        self.path = path
    }

    /// Opens (creating the directory and the file, migrating the schema). A pool given up before is closed
    /// first, waiting at most `waitingForReads` for the reads that still hold it.
    func open(waitingForReads: TimeInterval = 0) throws(StoreError) {
        do {
            guard try leases.retire(waitingUpTo: waitingForReads) else {
                throw StoreError.cannotOpen(path: path, reason: "reads of the file given up are still finishing")
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotOpen(path: path, reason: "the file given up could not be closed: \(StepStore.reason(error))")
        }
        if let refused, refused.contents == StoreFileContents.of(path: path),
           refused.file == (try? StoreFileIdentity.of(path: path).get()) { throw refused.error }
        refused = nil
        if let damage = WriteAheadLog.damage(at: path + "-wal") {
            throw .damagedLog(path: path + "-wal", reason: damage)
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        } catch {
            throw .cannotCreateDirectory(path: directory, reason: StepStore.reason(error))
        }
        // SQLite opens a read-only file without complaint and fails only at the first write; a connection
        // opened then stays read-only after a remount, so it is not opened until the place is writable.
        for place in [directory, path] where access(place, W_OK) != 0 && errno != ENOENT {
            throw .cannotWrite(path: path, reason: "\(place): \(String(cString: strerror(errno)))")
        }
        if let refusal = StoreSchema.refusal(path: path) {
            throw .cannotOpen(path: path, reason: refusal.description)
        }
        func refuse(_ violation: StoreRanges.Violation) -> StoreError {
            let error = StoreError.outOfRange(path: path, reason: violation.description)
            refused = (try? StoreFileIdentity.of(path: path).get(), StoreFileContents.of(path: path), error)
            return error
        }
        // A value out of range refuses the file before anything writes to it: the pool below would switch it to
        // WAL (a clean stop leaves it in DELETE mode) and claim it, and a refused file is left as it is. A file
        // scanned so is not scanned again after the migration, which adds no value of its own.
        var scanned = false
        if FileManager.default.fileExists(atPath: path) {
            switch Self.rangeCheck(readingOnly: path) {
            case .inRange: scanned = true
            case .violation(let violation): throw refuse(violation)
            case .unread: break
            }
        }
        var config = GRDB.Configuration()
        config.journalMode = .wal
        config.label = "stepd.store"
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            // In WAL mode NORMAL keeps every committed transaction across a crash of the process (the WAL is
            // in the page cache) and syncs only at checkpoints, sparing the SD card of a small board.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Each commit writes the pages it touched (a minute bin's and the counter's) to the WAL: small
            // pages make that 2 KiB rather than 8 KiB twice a second of walking. Takes effect on a new file.
            try db.execute(sql: "PRAGMA page_size = 1024")
        }
        do {
            let db = try DatabasePool(path: path, configuration: config)
            do {
                try db.write(StoreSchema.claim)
            } catch let refusal as StoreSchema.NotOurs {
                try? db.close()
                throw StoreError.cannotOpen(path: path, reason: refusal.description)
            }
            try StoreSchema.migrator.migrate(db)
            // A new file, or one the read-only scan could not read (a schema from before a migration).
            if !scanned, let violation = try db.read(StoreRanges.firstViolation) {
                try? db.close()
                throw refuse(violation)
            }
            guard case .success(let opened) = StoreFileIdentity.of(path: path) else {
                try? db.close()
                throw StoreError.cannotOpen(path: path, reason: "the file vanished as it was opened")
            }
            database = db
            identity = opened
            contents = StoreFileContents.of(path: path)
            leases.install(db)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotOpen(path: path, reason: StepStore.reason(error))
        }
    }

    /// Why the open database's file is no longer the one the store wrote (another file at the path, or the
    /// same one changed by another program); nil while it is. The caller gives it up (`drop`).
    func checkFile() -> StoreFileProblem? {
        guard database != nil, let identity else { return nil }
        switch StoreFileIdentity.of(path: path) {
        case .success(let now) where now == identity:
            return contents?.change(to: StoreFileContents.of(path: path))
        case .success: return .replaced
        case .failure(let why): return why
        }
    }

    /// Writes `batch` in one transaction. On failure the caller gives the database up (`drop`: a connection
    /// that met a read-only file or a full disk may keep failing after the cause is gone) and reopens it later.
    /// `now` is the counter's `updated` time.
    func write(_ batch: PendingWrites, at now: Date) throws(StoreError) {
        do {
            try transaction { db in try Self.write(batch, at: now, into: db) }
        } catch {
            throw .cannotWrite(path: path, reason: StepStore.reason(error))
        }
    }

    /// One write transaction, after which the file's size and time are the store's own again.
    func transaction<T>(_ body: (Database) throws -> T) throws -> T {
        guard let database else { throw StoreError.unavailable(reason: "the history database is not open") }
        defer { contents = StoreFileContents.of(path: path) }
        do {
            return try database.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT {
            // close() interrupts the whole pool to stop the readers; a commit caught in it runs again.
            return try database.write(body)
        }
    }

    /// The saved counter, or nil in a new database.
    func readCounter() throws(StoreError) -> StepStore.Counter? {
        guard let database else { return nil }
        do {
            return try database.read(Self.counter)
        } catch {
            throw .cannotRead(path: path, reason: StepStore.reason(error))
        }
    }

    private enum RangeCheck {
        case inRange
        case violation(StoreRanges.Violation)
        /// The file could not be scanned without writing (the open that follows says why, or scans it then).
        case unread
    }

    /// The file at `path` scanned for a value out of range, read without writing.
    private static func rangeCheck(readingOnly path: String) -> RangeCheck {
        var config = GRDB.Configuration()
        config.readonly = true
        guard let db = try? DatabaseQueue(path: path, configuration: config) else { return .unread }
        defer { try? db.close() }
        do {
            return try db.read(StoreRanges.firstViolation).map(RangeCheck.violation) ?? .inRange
        } catch {
            return .unread
        }
    }

    /// The saved counter of a file that cannot be opened for writing, or nil.
    func readOnlyCounter() -> StepStore.Counter? {
        guard FileManager.default.fileExists(atPath: path), WriteAheadLog.damage(at: path + "-wal") == nil else { return nil }
        var config = GRDB.Configuration()
        config.readonly = true
        guard let db = try? DatabaseQueue(path: path, configuration: config) else { return nil }
        defer { try? db.close() }
        return try? db.read { db in
            // A value out of range is not a count to go on from (the open said why).
            guard try StoreRanges.firstViolation(db) == nil else { return nil }
            return try Self.counter(db)
        }
    }

    /// Drops history older than `cutoff`; returns the rows removed, by kind.
    func prune(olderThan cutoff: Date) throws(StoreError) -> PrunedRows {
        guard database != nil else { return PrunedRows() }
        do {
            return try transaction { db -> PrunedRows in
                var pruned = PrunedRows()
                try db.execute(sql: "DELETE FROM minute_bin WHERE minute < ?", arguments: [PendingWrites.minute(of: cutoff)])
                pruned.minutes = db.changesCount
                try db.execute(sql: "DELETE FROM track_point WHERE time < ?", arguments: [cutoff.timeIntervalSince1970])
                pruned.trackPoints = db.changesCount
                try db.execute(sql: "DELETE FROM visit WHERE coalesce(departure, arrival) < ?",
                               arguments: [cutoff.timeIntervalSince1970])
                pruned.visits = db.changesCount
                try db.execute(sql: "DELETE FROM walking_bout WHERE end < ?", arguments: [cutoff.timeIntervalSince1970])
                pruned.bouts = db.changesCount
                return pruned
            }
        } catch {
            throw .cannotWrite(path: path, reason: StepStore.reason(error))
        }
    }

    /// Closes the file for good (a clean stop), once the reads in flight (interrupted) have returned.
    func close() throws {
        database = nil
        identity = nil
        contents = nil
        guard try leases.retire(waitingUpTo: 2, foldingLog: true) else {
            throw StoreError.unavailable(reason: "reads still hold the database; left open")
        }
    }

    /// Gives the database up: no new read gets it, those in flight stop, and it is closed once they have
    /// returned (here, or before the next open).
    func drop() {
        database = nil
        identity = nil
        contents = nil
        _ = try? leases.retire(waitingUpTo: 1)
    }

    /// After another file was put at the path (a backup moved over it): moves this store's own write-ahead log
    /// and index away from the path, to `aside`, so that the file now there is opened without them. SQLite
    /// leaves the log of a file that is no longer at its path when it closes it, and would replay it over the
    /// new file at the next open (a backup's 571,894 minute bins became 2). The log is the store's own when it
    /// is as the last commit left it; one moved in with the new file is left to it. Returns whether it moved.
    func setAsideOwnLog(as aside: String) throws -> Bool {
        guard let ours = contents?.log, StoreFileContents.Stamp.of(path: path + "-wal") == ours else { return false }
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, aside + suffix) == 0 else {
                throw StoreError.cannotWrite(path: path, reason: "cannot move its write-ahead log to \(aside + suffix): \(String(cString: strerror(errno)))")
            }
        }
        return true
    }

    /// Moves a file changed by another program (and its log and index, if any) to `aside`, so that a fresh
    /// database is made at the path and the stranger's contents are kept for a person to look at.
    func setAside(as aside: String) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, aside + suffix) == 0 else {
                throw StoreError.cannotWrite(path: path, reason: "cannot move it to \(aside): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// `SELECT *` and columns by name: a file opened read-only is not migrated, and one written before v3 has
    /// no floors columns (nil then). One written before v6 has no distance: the minute bins' since the reset's
    /// minute stand in for it (each step's own stride, as the counter's is).
    private static func counter(_ db: Database) throws -> StepStore.Counter? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM counter WHERE id = 1") else { return nil }
        let ascended: Int? = row["floors_ascended"], descended: Int? = row["floors_descended"]
        let since = Date(timeIntervalSince1970: row["since"])
        var distance: Double? = row.hasColumn("distance_m") ? row["distance_m"] : nil
        if distance == nil {
            distance = try Double.fetchOne(db, sql: "SELECT coalesce(sum(distance_m), 0) FROM minute_bin WHERE minute >= ?",
                                           arguments: [PendingWrites.minute(of: since)])
        }
        return StepStore.Counter(steps: row["steps"], since: since, distanceMeters: distance ?? 0,
                                 floors: ascended.map { FloorCounts(ascended: $0, descended: descended ?? 0) })
    }

    private static func write(_ batch: PendingWrites, at now: Date, into db: Database) throws {
        for (minute, delta) in batch.minutes {
            try db.execute(sql: """
                INSERT INTO minute_bin (minute, steps, distance_m, floors) VALUES (?, ?, ?, ?)
                ON CONFLICT(minute) DO UPDATE SET steps = steps + excluded.steps,
                    distance_m = distance_m + excluded.distance_m,
                    floors = CASE WHEN excluded.floors IS NULL THEN floors
                                  ELSE coalesce(floors, 0) + excluded.floors END
                """, arguments: [minute, delta.steps, delta.distanceMeters, delta.floors])
        }
        if let counter = batch.counter {
            try db.execute(sql: """
                INSERT INTO counter (id, steps, since, updated, floors_ascended, floors_descended, distance_m)
                VALUES (1, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET steps = excluded.steps, since = excluded.since, updated = excluded.updated,
                    floors_ascended = excluded.floors_ascended, floors_descended = excluded.floors_descended,
                    distance_m = excluded.distance_m
                """, arguments: [counter.steps, counter.since.timeIntervalSince1970, now.timeIntervalSince1970,
                                 counter.floors?.ascended, counter.floors?.descended, counter.distanceMeters])
        }
        for p in batch.trackPoints {
            try db.execute(sql: """
                INSERT INTO track_point (time, latitude_deg, longitude_deg, altitude_msl_m, eph_m, mode, satellites_used)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [p.time.timeIntervalSince1970, p.latitudeDegrees, p.longitudeDegrees,
                                 p.altitudeMSLMeters, p.ephMeters, p.mode, p.satellitesUsed])
        }
        for v in batch.visits.values {
            try db.execute(sql: """
                INSERT OR REPLACE INTO visit (arrival, departure, latitude_deg, longitude_deg, radius_m, fix_count)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [v.arrival.timeIntervalSince1970, v.departure?.timeIntervalSince1970,
                                 v.latitudeDegrees, v.longitudeDegrees, v.radiusMeters, v.fixCount])
        }
        for bout in batch.bouts.values { try StepStore.write(bout, into: db) }
    }
}

/// What one pruning removed: minute bins (steps), points of the path, visits.
struct PrunedRows: Equatable {
    var minutes = 0
    var trackPoints = 0
    var visits = 0
    var bouts = 0
    var total: Int { minutes + trackPoints + visits + bouts }

    /// "12 minute bins of steps, 3600 track points and 2 visits", naming only what was removed.
    var description: String {
        let parts = [(minutes, "minute bin", "minute bins"), (trackPoints, "track point", "track points"), (visits, "visit", "visits"),
                     (bouts, "walking bout", "walking bouts")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.0 == 1 ? $0.1 : $0.2)" }
        guard let last = parts.last else { return "nothing" }
        return parts.count == 1 ? last : parts.dropLast().joined(separator: ", ") + " and " + last
    }
}
