import Foundation
import GRDB

/// The open database pool and the reads that hold it. GRDB's `DatabasePool` must not be closed while a read
/// uses it: a read that meets a closed connection hands SQLite a freed handle (SIGSEGV in
/// `sqlite3_get_autocommit` under `DatabasePool.read`, seen with history reads while the file was deleted every
/// 0.7 s, while the disk filled, and at SIGTERM). So the store's queue is the pool's one owner: it installs and
/// retires it; a read takes a lease and gives it back; a retired pool is closed only once no lease holds it.
///
/// No new pool is installed while a retired one is still open: closing runs SQLite's last checkpoint and then
/// deletes the write-ahead log *by name*, which must never be the next database's log.
final class DatabaseLeases: @unchecked Sendable {
    // All under `condition`.
    private let condition = NSCondition()
    private var pool: DatabasePool?
    /// The pool is being given up: no new lease, and the reads holding one stop.
    private var retired = false
    private var holders = 0

    /// Makes `pool` the one reads lease (on the store's queue, once `retire` has closed the previous one).
    func install(_ pool: DatabasePool) {
        condition.withLock {
            precondition(self.pool == nil, "a database pool installed while another is still open")
            self.pool = pool
            retired = false
        }
    }

    /// The pool for one read, or nil when there is none or it is being given up. Every lease is returned with
    /// `release()`.
    func lease() -> DatabasePool? {
        condition.withLock {
            guard let pool, !retired else { return nil }
            holders += 1
            return pool
        }
    }

    func release() {
        condition.withLock {
            holders -= 1
            if holders == 0 { condition.broadcast() }
        }
    }

    /// Whether the pool a read holds is being given up: the read stops and says the store's state. (There
    /// is one pool at a time, so a holder's pool is always the current one.)
    var isRevoked: Bool { condition.withLock { retired } }

    /// Stops the reads in flight at their next statement or row (SQLite's interrupt), from any thread; the
    /// lock keeps the pool open meanwhile.
    func interrupt() {
        condition.withLock { pool?.interrupt() }
    }

    /// Gives the pool up: no new lease, the reads holding one are interrupted, and once the last has been
    /// returned (waiting at most `timeout`) the pool is closed. Returns false while reads still hold it: it
    /// stays retired, and a later call closes it. On the store's queue.
    @discardableResult
    func retire(waitingUpTo timeout: TimeInterval) throws -> Bool {
        try condition.withLock {
            guard let pool else { return true }
            if !retired {
                retired = true
                pool.interrupt()
            }
            let deadline = Date().addingTimeInterval(timeout)
            while holders > 0, condition.wait(until: deadline) {}
            guard holders == 0 else { return false }
            self.pool = nil
            retired = false
            // Under the lock, so that `interrupt` never reaches a closing pool.
            try pool.close()
            return true
        }
    }
}
