import Dispatch
import Foundation
import GRDB
import StepProcessing

/// Reading history back. Pending steps are committed first on the store's queue (so history never lags
/// STEPS), then the read runs on `readers`: a WAL reader sees the last commit and never holds the next one
/// back, however long a client's request takes. Every read is bounded (bin ranges, row limits) and gives
/// up when the daemon stops. A read holds a lease on the pool (`DatabaseLeases`), so the store never closes
/// a pool under it; when the store gives its database up (a lost or changed file, a failed commit) the read
/// stops and answers with the store's state.
extension StepStore {
    /// A track request returns at most this many points: a day at 1 Hz, as the path kept in memory.
    public static let maximumTrackPoints = 86_400
    /// A visits request returns at most this many stays.
    public static let maximumVisits = 10_000

    /// The bins over [from, to).
    public func history(from: Date, to: Date, size: HistoryBinSize, zone: LocalZone = .utc,
                        completion: @escaping @Sendable (Result<[HistoryBin], StoreError>) -> Void) {
        read(completion: completion) { [self] database in
            try readHistory(database, from: from, to: to, size: size, zone: zone)
        }
    }

    /// The saved track points in [from, to), oldest first.
    public func trackPoints(from: Date, to: Date,
                            completion: @escaping @Sendable (Result<[StoredTrackPoint], StoreError>) -> Void) {
        read(completion: completion) { [self] database in try readTrackPoints(database, from: from, to: to) }
    }

    /// What a track export of [from, to) will hold, counted in one pass that keeps no point: the points the
    /// path accepts, their first and last times, and the path's length. The points themselves are read a page at
    /// a time as the document is written (`trackPage`).
    package func trackSummary(from: Date, to: Date, configuration: TrackBuilder.Configuration,
                      completion: @escaping @Sendable (Result<StoredTrackSummary, StoreError>) -> Void) {
        read(completion: completion) { [self] database in
            guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
            let limit = Self.maximumTrackPoints
            return try wrapRead {
                try database.read { db in
                    var summary = StoredPath.Summary(configuration: configuration)
                    var rows = 0
                    let cursor = try Row.fetchCursor(db, sql: "\(Self.trackSelect) WHERE time >= ? AND time < ? ORDER BY time, rowid",
                                                     arguments: [from.timeIntervalSince1970, to.timeIntervalSince1970])
                    while let row = try cursor.next() {
                        rows += 1
                        guard rows <= limit else { throw StoreError.tooManyRows(what: "track points", limit: limit) }
                        if rows % 4096 == 0 { try checkReadable() }
                        summary.add(Self.trackPoint(row))
                    }
                    return summary.stored
                }
            }
        }
    }

    /// Up to `limit` saved track points in [from, to) after `key` (or from the start when nil), in the order
    /// `trackSummary` counts them, with the key to ask for the next page. Read without committing pending
    /// steps first: the summary did, and a page must not wait behind the store's queue.
    func trackPage(from: Date, to: Date, after key: TrackPageKey?, limit: Int) throws -> (points: [StoredTrackPoint], last: TrackPageKey?) {
        try leased { database in
            try wrapRead {
                try database.read { db in
                    let keyed = key.map { _ in "AND (time > ? OR (time = ? AND rowid > ?))" } ?? ""
                    var arguments: StatementArguments = [from.timeIntervalSince1970, to.timeIntervalSince1970]
                    if let key { arguments += [key.time, key.time, key.rowID] }
                    arguments += [limit]
                    let page = try Row.fetchAll(db, sql: """
                        SELECT time, latitude_deg, longitude_deg, altitude_msl_m, eph_m, mode, satellites_used, rowid
                        FROM track_point WHERE time >= ? AND time < ? \(keyed) ORDER BY time, rowid LIMIT ?
                        """, arguments: arguments)
                    let last = page.last.map { TrackPageKey(time: $0[0], rowID: $0[7]) }
                    return (page.map(Self.trackPoint), last)
                }
            }
        }
    }

    /// The saved stays that overlap [from, to), oldest first.
    public func visits(from: Date, to: Date, completion: @escaping @Sendable (Result<[StoredVisit], StoreError>) -> Void) {
        read(completion: completion) { [self] database in try readVisits(database, from: from, to: to) }
    }

    // The same, waiting for the answer (tests, and the restore at start).

    public func history(from: Date, to: Date, size: HistoryBinSize, zone: LocalZone = .utc) throws -> [HistoryBin] {
        try readNow { try readHistory($0, from: from, to: to, size: size, zone: zone) }
    }

    public func trackPoints(from: Date, to: Date) throws -> [StoredTrackPoint] {
        try readNow { try readTrackPoints($0, from: from, to: to) }
    }

    public func visits(from: Date, to: Date) throws -> [StoredVisit] {
        try readNow { try readVisits($0, from: from, to: to) }
    }

    /// The newest `limit` track points, oldest first: what the path in memory starts from after a restart.
    public func latestTrackPoints(limit: Int) throws -> [StoredTrackPoint] {
        try readNow { database in
            try wrapRead {
                try database.read { db in
                    try Row.fetchAll(db, sql: "SELECT * FROM (\(Self.trackSelect) ORDER BY time DESC LIMIT ?) ORDER BY time",
                                     arguments: [limit]).map(Self.trackPoint)
                }
            }
        }
    }

    /// The newest `limit` stays, oldest first.
    public func latestVisits(limit: Int) throws -> [StoredVisit] {
        try readNow { database in
            try wrapRead {
                try database.read { db in
                    try Row.fetchAll(db, sql: """
                        SELECT * FROM (SELECT \(Self.visitColumns) FROM visit ORDER BY arrival DESC LIMIT ?) ORDER BY arrival
                        """, arguments: [limit]).map(Self.storedVisit)
                }
            }
        }
    }

    static let visitColumns = "arrival, departure, latitude_deg, longitude_deg, radius_m, fix_count"

    // MARK: Private

    /// A row of `SELECT \(visitColumns) FROM visit`.
    static func storedVisit(_ row: Row) -> StoredVisit {
        StoredVisit(arrival: Date(timeIntervalSince1970: row[0]),
                    departure: (row[1] as Double?).map(Date.init(timeIntervalSince1970:)),
                    latitudeDegrees: row[2], longitudeDegrees: row[3], radiusMeters: row[4], fixCount: row[5])
    }

    func read<T: Sendable>(completion: @escaping @Sendable (Result<T, StoreError>) -> Void,
                                   _ body: @escaping @Sendable (DatabasePool) throws -> T) {
        queue.async { [self] in
            flushForReading()
            readers.addOperation { [self] in
                completion(Result { try leased(body) }
                    .mapError { $0 as? StoreError ?? .cannotRead(path: configuration.path, reason: Self.reason($0)) })
            }
        }
    }

    func readNow<T>(_ body: (DatabasePool) throws -> T) throws -> T {
        queue.sync { flushForReading() }
        return try leased(body)
    }

    /// Runs `body` on the pool under a lease: the store closes no pool a read holds.
    func leased<T>(_ body: (DatabasePool) throws -> T) throws -> T {
        try checkReadable()
        guard let database = leases.lease() else { throw unavailable() }
        defer { leases.release() }
        return try body(database)
    }

    /// Why there is nothing to read, with the store's state ("the store is failed: lost the step database
    /// ..."). From the published status, never from the queue, which may be waiting for this very read.
    private func unavailable() -> StoreError {
        if stopping.withLockedValue({ $0 }) { return .unavailable(reason: "stepd is stopping") }
        let status = self.status
        if status.state == "failed" { return .failed(reason: status.error) }
        return .unavailable(reason: "the store is \(status.state)" + (status.error.map { ": \($0)" } ?? ""))
    }

    /// Throws when the daemon stops or the store gives the pool up: a long read ends at its next step.
    private func checkReadable() throws {
        if stopping.withLockedValue({ $0 }) || leases.isRevoked { throw unavailable() }
    }

    private func readHistory(_ database: DatabasePool, from: Date, to: Date, size: HistoryBinSize,
                             zone: LocalZone) throws -> [HistoryBin] {
        try HistoryBinning.validate(from: from, to: to, size: size)
        let range = HistoryBinning.minuteRange(from: from, to: to)
        if size == .minute {
            return try wrapRead {
                try database.read { db in
                    try Row.fetchAll(db, sql: """
                        SELECT minute, steps, distance_m, floors FROM minute_bin
                        WHERE minute >= ? AND minute < ? ORDER BY minute
                        """, arguments: [range.lowerBound, range.upperBound]).map { row in
                        let start = Date(timeIntervalSince1970: Double(row[0] as Int64) * 60)
                        return HistoryBin(start: start, end: start.addingTimeInterval(60), steps: row[1],
                                          distanceMeters: row[2], floors: row[3])
                    }
                }
            }
        }
        // One indexed range sum per local hour or day: far cheaper than grouping every minute row, and exact
        // across clock changes because the calendar draws the boundaries.
        let intervals = HistoryBinning.intervals(from: from, to: to, size: size, zone: zone)
        return try wrapRead {
            try database.read { db in
                let sum = try db.cachedStatement(sql: """
                    SELECT COUNT(*), SUM(steps), SUM(distance_m), SUM(floors) FROM minute_bin
                    WHERE minute >= ? AND minute < ?
                    """)
                var bins: [HistoryBin] = []
                for interval in intervals {
                    try checkReadable()
                    let lower = max(range.lowerBound, HistoryBinning.minute(interval.start))
                    let upper = min(range.upperBound, HistoryBinning.minute(interval.end))
                    guard lower < upper, let row = try Row.fetchOne(sum, arguments: [lower, upper]),
                          (row[0] as Int) > 0 else { continue }
                    bins.append(HistoryBin(start: interval.start, end: interval.end, steps: row[1],
                                           distanceMeters: row[2], floors: row[3]))
                }
                return bins
            }
        }
    }

    static let trackSelect = """
        SELECT time, latitude_deg, longitude_deg, altitude_msl_m, eph_m, mode, satellites_used FROM track_point
        """

    static func trackPoint(_ row: Row) -> StoredTrackPoint {
        StoredTrackPoint(time: Date(timeIntervalSince1970: row[0]), latitudeDegrees: row[1], longitudeDegrees: row[2],
                         altitudeMSLMeters: row[3], ephMeters: row[4], mode: row[5], satellitesUsed: row[6])
    }

    private func readTrackPoints(_ database: DatabasePool, from: Date, to: Date) throws -> [StoredTrackPoint] {
        guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
        let limit = Self.maximumTrackPoints
        let points = try wrapRead {
            try database.read { db in
                try Row.fetchAll(db, sql: "\(Self.trackSelect) WHERE time >= ? AND time < ? ORDER BY time LIMIT ?",
                                 arguments: [from.timeIntervalSince1970, to.timeIntervalSince1970, limit + 1])
                    .map(Self.trackPoint)
            }
        }
        guard points.count <= limit else { throw StoreError.tooManyRows(what: "track points", limit: limit) }
        return points
    }

    private func readVisits(_ database: DatabasePool, from: Date, to: Date) throws -> [StoredVisit] {
        guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
        let limit = Self.maximumVisits
        let visits = try wrapRead {
            try database.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT \(Self.visitColumns) FROM visit WHERE arrival < ? AND coalesce(departure, arrival) >= ? ORDER BY arrival LIMIT ?
                    """, arguments: [to.timeIntervalSince1970, from.timeIntervalSince1970, limit + 1]).map(Self.storedVisit)
            }
        }
        guard visits.count <= limit else { throw StoreError.tooManyRows(what: "visits", limit: limit) }
        return visits
    }

    func wrapRead<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as StoreError { throw error } catch {
            // Interrupted because the daemon stops or the store gave the pool up.
            if stopping.withLockedValue({ $0 }) || leases.isRevoked { throw unavailable() }
            throw StoreError.cannotRead(path: configuration.path, reason: Self.reason(error))
        }
    }
}
