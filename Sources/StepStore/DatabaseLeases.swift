import Dispatch
import Foundation
import GRDB
import Locking
import Timekeeping

/// The open database pool and the reads that hold it. GRDB's `DatabasePool` must not be closed while a read
/// uses it: a read that meets a closed connection hands SQLite a freed handle (SIGSEGV in
/// `sqlite3_get_autocommit` under `DatabasePool.read`, seen with history reads while the file was deleted every
/// 0.7 s, while the disk filled, and at SIGTERM). So the store's queue is the pool's one owner: it installs and
/// retires it; a read takes a lease and gives it back; a retired pool is closed only once no lease holds it.
///
/// No new pool is installed while a retired one is still open: closing runs SQLite's last checkpoint and then
/// deletes the write-ahead log *by name*, which must never be the next database's log.
///
/// Sendable by construction: the pool and whether it is retired are in a `Locked` value; the leases held are counted by
/// a DispatchGroup (entered under the lock), which `retire` waits on.
final class DatabaseLeases: Sendable {
    private struct State {
        var pool: DatabasePool?
        /// The pool is being given up: no new lease, and the reads holding one stop.
        var retired = false
    }
    private let state = Locked(State())
    /// One member per lease held.
    private let holders = DispatchGroup()

    /// Makes `pool` the one reads lease (on the store's queue, once `retire` has closed the previous one).
    func install(_ pool: DatabasePool) {
        state.withLock {
            precondition($0.pool == nil, "a database pool installed while another is still open")
            $0.pool = pool
            $0.retired = false
        }
    }

    /// The pool for one read, or nil when there is none or it is being given up. Every lease is returned with
    /// `release()`.
    func lease() -> DatabasePool? {
        state.withLock {
            guard let pool = $0.pool, !$0.retired else { return nil }
            holders.enter()
            return pool
        }
    }

    func release() {
        holders.leave()
    }

    /// Whether the pool a read holds is being given up: the read stops and says the store's state. (There
    /// is one pool at a time, so a holder's pool is always the current one.)
    var isRevoked: Bool { state.withLock { $0.retired } }

    /// Stops the reads in flight at their next statement or row (SQLite's interrupt), from any thread; the
    /// lock keeps the pool open meanwhile.
    func interrupt() {
        state.withLock { $0.pool?.interrupt() }
    }

    /// Gives the pool up: no new lease, the reads holding one are interrupted, and once the last has been
    /// returned (waiting at most `timeout`) the pool is closed. Returns false while reads still hold it: it
    /// stays retired, and a later call closes it. On the store's queue.
    ///
    /// `foldingLog` (a clean stop): before closing, the readers are closed and the writer folds the write-ahead log
    /// into the database and truncates it, so that the file alone holds everything (`Self.foldLog`).
    @discardableResult
    func retire(waitingUpTo timeout: TimeInterval, foldingLog: Bool = false) throws -> Bool {
        let held = state.withLock { state -> Bool in
            guard let pool = state.pool else { return false }
            if !state.retired {
                state.retired = true
                pool.interrupt()
            }
            return true
        }
        guard held else { return true }
        // No lease is taken once retired, so the count only falls while this waits.
        guard holders.wait(timeout: SystemClock.dispatchDeadline(after: timeout)) == .success else { return false }
        return try state.withLock { state throws -> Bool in
            guard let pool = state.pool else { return true }
            state.pool = nil
            state.retired = false
            // Under the lock, so that `interrupt` never reaches a closing pool.
            var folding: Error?
            if foldingLog {
                do { try Self.foldLog(pool) } catch { folding = error }
            }
            try pool.close()
            if let folding { throw folding }
            return true
        }
    }

    /// SQLite folds the log into the database when its last connection closes, but GRDB closes the pool's writer
    /// first and its readers last, and a reader's descriptor is read-only: the final checkpoint's lock failed
    /// (`fcntl(F_SETLK, F_WRLCK)`: EBADF) and a clean stop left a 1 KiB `stepd.sqlite` with everything in
    /// `stepd.sqlite-wal`, so that a copy of the file alone was an empty database. Here the idle readers are
    /// closed first (no read holds the pool any more) and the writer checkpoints with TRUNCATE; its close, the
    /// last, then removes the log.
    static func foldLog(_ pool: DatabasePool) throws {
        pool.releaseMemory()
        let busy = try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        if busy != 0 { throw StoreError.unavailable(reason: "the write-ahead log could not be folded into the database: a reader still holds it") }
        // Left in rollback mode, the file opens read-only without a log or index beside it (a card mounted
        // read-only at the next start, where SQLite cannot create them); the next open sets WAL again.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
    }
}
