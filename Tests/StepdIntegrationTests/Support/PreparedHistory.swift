import Foundation
import XCTest

/// A history database made by a daemon that ran a moment on a still recording, then filled by Python's sqlite3:
/// years of history or a day's track in seconds, without counting them live.
enum PreparedHistory {
    /// A board lying still: the daemon's first run only creates the database in `state`.
    static func create(state: String, directory: TemporaryDirectory) throws {
        var text = "t,x,y,z\n"
        for i in 0..<200 { text += String(format: "%.2f,0.0,0.0,9.81\n", Double(i) / 100) }
        let still = directory.file("still.csv")
        try text.write(toFile: still, atomically: true, encoding: .utf8)
        let first = try Daemon(arguments: ["--replay", still, "--no-gps", "--state-dir", state], directory: directory,
                               socketName: "create.sock")
        XCTAssertEqual(first.terminate(), 0)
    }

    /// Runs Python's sqlite3 on the stopped daemon's database (`db` is the connection, `now` the Unix time).
    static func fill(state: String, _ script: String) throws {
        let program = "import sqlite3, sys, time\ndb = sqlite3.connect(sys.argv[1])\nnow = time.time()\n" + script + "\ndb.commit()\n"
        let result = try runCommand("/usr/bin/env", ["python3", "-c", program, state + "/stepd.sqlite"])
        XCTAssertEqual(result.status, 0, result.stderr)
    }
}
