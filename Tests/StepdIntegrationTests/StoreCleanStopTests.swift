import Foundation
import StepProtocol
import XCTest

/// What a clean stop leaves on the disk: `stepd.sqlite` alone holds the count and the history, so that a copy
/// of the file (a backup taken with `cp` after `systemctl stop`) is the whole database.
final class StoreCleanStopTests: XCTestCase {
    /// The count in the daemon's stop line ("stepd: stopped; N steps since ... saved to ...").
    private func savedCount(_ daemon: Daemon) throws -> Int {
        let line = try XCTUnwrap(daemon.log.split(separator: "\n").first { $0.hasPrefix("stepd: stopped; ") },
                                 "no stop line:\n\(daemon.log)")
        return try XCTUnwrap(Int(line.split(separator: " ")[2]), String(line))
    }

    /// Runs Python's sqlite3 on `path`: `script` gets the connection as `db`; returns what it prints.
    private func sqlite(_ path: String, _ script: String) throws -> String {
        let program = "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n" + script + "\ndb.close()\n"
        let result = try runCommand("/usr/bin/python3", ["-c", program, path], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testAfterACleanStopTheDatabaseFileAloneHoldsTheCountAndEveryBout() throws {
        let directory = try TemporaryDirectory()
        let state = directory.file("state")
        // Played once: its bout ends with the recording.
        let daemon = try Daemon(arguments: ["--replay", Binaries.bundledRecording, "--speed", "20", "--no-gps",
                                            "--state-dir", state], directory: directory)
        let from = Timestamp.string(Date().addingTimeInterval(-3600))
        var bouts = 0
        try daemon.waitUntil(timeout: 90, "a walking bout in history") { _ in
            let history = try daemon.connect().request(["cmd": "history", "from": from, "bouts": true])
            bouts = (history["bouts"] as? [[String: Any]])?.count ?? 0
            return bouts > 0
        }
        XCTAssertEqual(daemon.terminate(), 0, daemon.log)
        let saved = try savedCount(daemon)
        let log = (try? FileManager.default.attributesOfItem(atPath: state + "/stepd.sqlite-wal")[.size] as? Int) ?? 0
        XCTAssertEqual(log, 0, "the write-ahead log is folded in and gone")

        let copy = directory.file("copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: state + "/stepd.sqlite", toPath: copy + "/stepd.sqlite")
        let found = try sqlite(copy + "/stepd.sqlite", """
            print(db.execute("SELECT steps FROM counter").fetchone()[0])
            print(db.execute("SELECT count(*) FROM walking_bout").fetchone()[0])
            """).split(separator: "\n").map { Int($0) ?? -1 }
        XCTAssertEqual(found.first, saved, "the counter")
        XCTAssertGreaterThanOrEqual(found.last ?? 0, bouts, "every bout")

        // A daemon on the copy alone goes on from the same count.
        var still = "t,x,y,z\n"
        for i in 0..<200 { still += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        try still.write(toFile: directory.file("still.csv"), atomically: true, encoding: .utf8)
        let again = try Daemon(arguments: ["--replay", directory.file("still.csv"), "--no-gps", "--state-dir", copy],
                               directory: directory, socketName: "again.sock")
        XCTAssertEqual(try again.connect().request(["cmd": "steps"])["steps"] as? Int, saved)
        XCTAssertEqual(again.terminate(), 0, again.log)
    }
}
