import Foundation
import XCTest

/// A backup restored by `mv` over the running daemon's database, and a file that is not stepd's put there.
final class StoreRestoreTests: XCTestCase {
    private func store(_ status: [String: Any]) -> [String: Any] { status["store"] as? [String: Any] ?? [:] }

    private func steps(_ daemon: Daemon) throws -> Int {
        try XCTUnwrap(try daemon.connect().request(["cmd": "steps"])["steps"] as? Int)
    }

    private func walking(state: String, directory: TemporaryDirectory, socket: String = "stepd.sock") throws -> Daemon {
        try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "4", "--loop", "--no-gps",
                               "--state-dir", state], directory: directory, socketName: socket)
    }

    /// Runs Python's sqlite3 on `path`: `script` gets the connection as `db`; returns what it prints.
    private func sqlite(_ path: String, _ script: String) throws -> String {
        let program = "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n" + script + "\ndb.commit()\ndb.close()\n"
        let result = try runCommand("/usr/bin/python3", ["-c", program, path], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A backup (a stepd database of its own, with 5,000 minute bins of 2020) moved over the database of a
    /// daemon that is walking: the store notices, sets its own write-ahead log aside, and goes on in the backup
    /// with every one of its bins. Left beside the backup, the old file's log would be replayed over it by SQLite
    /// at the reopen: its pages overwritten and the bins of 2020 gone, with `integrity_check` saying ok.
    func testABackupMovedOverTheRunningDatabaseKeepsAllItsBins() throws {
        let directory = try TemporaryDirectory()
        // The backup: a database made by stepd, stopped, then filled.
        let made = try walking(state: directory.file("made"), directory: directory, socket: "made.sock")
        try made.waitUntil(timeout: 30, "a first commit") { try (self.store($0)["state"] as? String) == "ok" && self.steps(made) > 0 }
        XCTAssertEqual(made.terminate(), 0, made.log)
        let backup = directory.file("made/stepd.sqlite")
        let minute2020 = 1_577_836_800 / 60
        _ = try sqlite(backup, """
            db.executemany("INSERT INTO minute_bin (minute, steps, distance_m) VALUES (?, 7, 5.0)",
                           [(\(minute2020) + i,) for i in range(5000)])
            """)

        let state = directory.file("state")
        let daemon = try walking(state: state, directory: directory)
        try daemon.waitUntil(timeout: 30, "commits in the log") { _ in
            (try self.steps(daemon)) > 30
                && ((try? FileManager.default.attributesOfItem(atPath: state + "/stepd.sqlite-wal")[.size] as? Int) ?? 0) > 0
        }
        XCTAssertEqual(rename(backup, state + "/stepd.sqlite"), 0)
        try daemon.waitUntil(timeout: 15, "the store to notice") { status in
            (self.store(status)["error"] as? String ?? "").contains("another file was put in its place")
        }
        let before = try steps(daemon)
        try daemon.waitUntil(timeout: 20, "the store back on the backup") { status in
            try self.store(status)["state"] as? String == "ok" && self.steps(daemon) > before
        }
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
        XCTAssertTrue(daemon.log.contains("the old file's write-ahead log is kept as"), daemon.log)
        let kept = try sqlite(state + "/stepd.sqlite", """
            print(db.execute("SELECT count(*), sum(steps) FROM minute_bin WHERE minute >= ? AND minute < ?",
                             (\(minute2020), \(minute2020) + 5000)).fetchone())
            print(db.execute("PRAGMA integrity_check").fetchone()[0])
            """)
        XCTAssertEqual(kept, "(5000, 35000)\nok")
    }

    /// Another program's SQLite file put at the path (while running, and at start) is refused with a clear
    /// state and left as it was; counting goes on in memory. Before, it was taken for a healthy store: stepd's
    /// tables were added to it and the count written there.
    func testAnotherProgramsDatabaseAtThePathIsRefusedAndLeftAsItIs() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        let daemon = try walking(state: state, directory: directory)
        try daemon.waitUntil(timeout: 30, "a first commit") { try (self.store($0)["state"] as? String) == "ok" && self.steps(daemon) > 0 }
        let stranger = directory.file("stranger.sqlite")
        _ = try sqlite(stranger, "db.execute('CREATE TABLE notes (body TEXT)')\ndb.execute(\"INSERT INTO notes VALUES ('mine')\")")
        let original = try XCTUnwrap(FileManager.default.contents(atPath: stranger))
        XCTAssertEqual(rename(stranger, state + "/stepd.sqlite"), 0)
        let failed = try daemon.waitUntil(timeout: 30, "the stranger refused") { status in
            (self.store(status)["error"] as? String ?? "").contains("not a stepd database")
        }
        XCTAssertEqual(store(failed)["state"] as? String, "failed", "\(failed)")
        XCTAssertTrue((store(failed)["error"] as? String ?? "").contains("tables notes"), "\(failed)")
        let during = try steps(daemon)
        try daemon.waitUntil(timeout: 30, "counting going on") { _ in (try self.steps(daemon)) > during }
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
        XCTAssertEqual(FileManager.default.contents(atPath: state + "/stepd.sqlite"), original, "left as it was")

        // At start too.
        let again = try walking(state: state, directory: directory, socket: "again.sock")
        let refused = try again.waitUntil(timeout: 30, "refused at start") { status in
            (self.store(status)["error"] as? String ?? "").contains("not a stepd database")
        }
        XCTAssertEqual(store(refused)["state"] as? String, "failed")
        XCTAssertEqual(again.terminate(), 0, again.log)
        XCTAssertEqual(FileManager.default.contents(atPath: state + "/stepd.sqlite"), original)
    }
}
