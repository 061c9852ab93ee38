import Foundation
import XCTest

/// `make install` / `make uninstall`, and the installed units as systemd-analyze judges them.
final class ServiceInstallTests: XCTestCase {
    private func make(_ arguments: [String]) throws -> CommandResult {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/make") else { throw XCTSkip("make is not installed") }
        return try runCommand("/usr/bin/make", ["-C", Binaries.repository.path, "BUILT=\(Binaries.productsDirectory.path)"] + arguments)
    }

    private func systemdAnalyze() throws -> String {
        let path = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: path) else { throw XCTSkip("systemd-analyze is not installed") }
        return path
    }

    private func files(under root: String) -> Set<String> {
        var found: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.insert("/" + relative)
            }
        }
        return found
    }

    func testInstallsIntoDestdirAndUninstallsCleanly() throws {
        let directory = try TemporaryDirectory()
        let destdir = directory.file("root")
        let install = try make(["install", "DESTDIR=\(destdir)", "PREFIX=/usr"])
        XCTAssertEqual(install.status, 0, install.stdout + install.stderr)
        XCTAssertEqual(files(under: destdir), [
            "/usr/bin/stepd", "/usr/bin/stepctl", "/usr/bin/stepd-web",
            "/usr/libexec/stepd/swift-backtrace-static",  // the toolchain's, for stepd's crash backtraces (stepd(8))
            "/usr/lib/systemd/system/stepd.service", "/usr/lib/systemd/system/stepd.socket",
            "/usr/lib/systemd/system/stepd-web.service", "/usr/lib/sysusers.d/stepd-web.conf",
            "/usr/lib/sysusers.d/stepd.conf", "/usr/lib/udev/rules.d/60-stepd.rules",
            "/usr/share/stepd-web/index.html", "/usr/share/stepd-web/app.css", "/usr/share/stepd-web/app.js",
            "/usr/share/stepd-web/charts.js", "/usr/share/stepd-web/map.js", "/usr/share/stepd-web/seismometer.js",
            "/usr/share/stepd/81-stepd-no-sensor-proxy.rules.example",
            "/usr/share/stepd/walk-inhand.csv.gz", "/usr/share/stepd/README.md",
            "/usr/share/man/man8/stepd.8", "/usr/share/man/man1/stepctl.1", "/usr/share/man/man1/stepd-web.1",
            "/etc/stepd/stepd.conf", "/etc/stepd/stepd.conf.example",
        ])
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: destdir + "/usr/bin/stepd"))
        // One program: stepctl and stepd-web are links to stepd, which runs the one it is called as.
        for name in ["stepctl", "stepd-web"] {
            XCTAssertEqual(try? FileManager.default.destinationOfSymbolicLink(atPath: destdir + "/usr/bin/" + name), "stepd", name)
        }
        let client = try runCommand(destdir + "/usr/bin/stepctl", ["--help"])
        XCTAssertTrue(client.stdout.contains("USAGE: stepctl"), client.stdout + client.stderr)
        let web = try runCommand(destdir + "/usr/bin/stepd-web", ["--help"])
        XCTAssertTrue(web.stdout.contains("USAGE: stepd-web"), web.stdout + web.stderr)
        // Installed stripped: no symbol table (make install STRIP=true keeps it).
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/readelf") {
            let sections = try runCommand("/usr/bin/readelf", ["-S", "-W", destdir + "/usr/bin/stepd"])
            XCTAssertEqual(sections.status, 0, sections.stderr)
            XCTAssertFalse(sections.stdout.contains(".symtab"), "the installed stepd has a symbol table: not stripped")
            XCTAssertFalse(sections.stdout.contains(".debug_info"), "the installed stepd has debug information")
        }
        // The configuration names this installation's paths, not /usr/local's.
        let conf = try String(contentsOfFile: destdir + "/etc/stepd/stepd.conf", encoding: .utf8)
        XCTAssertTrue(conf.contains("\n#replay = /usr/share/stepd/walk-inhand.csv.gz\n"), conf)
        XCTAssertFalse(conf.contains("/usr/local"), conf)
        let unit = try String(contentsOfFile: destdir + "/usr/lib/systemd/system/stepd.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("\nExecStart=/usr/bin/stepd --config /etc/stepd/stepd.conf\n"), unit)
        for directive in ["Type=notify", "WatchdogSec=30", "Restart=on-failure", "RestartPreventExitStatus=64 65 66 78",
                          "User=stepd", "StateDirectory=stepd", "RuntimeDirectory=stepd", "DeviceAllow=char-iio rw"] {
            XCTAssertTrue(unit.contains("\n\(directive)\n"), "stepd.service lacks \(directive)")
        }
        let socketUnit = try String(contentsOfFile: destdir + "/usr/lib/systemd/system/stepd.socket", encoding: .utf8)
        for directive in ["ListenStream=/run/stepd/stepd.sock", "SocketGroup=stepd", "SocketMode=0660"] {
            XCTAssertTrue(socketUnit.contains("\n\(directive)\n"), "stepd.socket lacks \(directive)")
        }
        XCTAssertFalse(unit.contains("@BINDIR@") || unit.contains("@SYSCONFDIR@"), "an unsubstituted placeholder is left")
        let webUnit = try String(contentsOfFile: destdir + "/usr/lib/systemd/system/stepd-web.service", encoding: .utf8)
        XCTAssertTrue(webUnit.contains("\nExecStart=/usr/bin/stepd-web --assets /usr/share/stepd-web $STEPD_WEB_OPTIONS\n"), webUnit)
        // Placeholders are @NAME@; systemd's own @system-service syscall sets stay.
        XCTAssertNil(webUnit.range(of: "@[A-Z]+@", options: .regularExpression), "an unsubstituted placeholder is left in stepd-web.service")
        // The installed daemon finds the bundled recording beside its prefix.
        let analyze = try runCommand(destdir + "/usr/bin/stepd", ["analyze", destdir + "/usr/share/stepd/walk-inhand.csv.gz"])
        XCTAssertEqual(analyze.status, 0, analyze.stderr)

        // An administrator's configuration survives both a reinstall and the uninstall.
        try "log_level = debug\n".write(toFile: destdir + "/etc/stepd/stepd.conf", atomically: true, encoding: .utf8)
        XCTAssertEqual(try make(["install", "DESTDIR=\(destdir)", "PREFIX=/usr"]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: destdir + "/etc/stepd/stepd.conf", encoding: .utf8), "log_level = debug\n")
        let uninstall = try make(["uninstall", "DESTDIR=\(destdir)", "PREFIX=/usr"])
        XCTAssertEqual(uninstall.status, 0, uninstall.stderr)
        XCTAssertEqual(files(under: destdir), ["/etc/stepd/stepd.conf"])
    }

    func testInstalledUnitsPassVerifyAndAreHardened() throws {
        let analyze = try systemdAnalyze()
        let directory = try TemporaryDirectory()
        // Installed for real under a scratch prefix, so that ExecStart= names an existing binary.
        let prefix = directory.file("usr")
        let install = try make(["install", "PREFIX=\(prefix)", "SYSCONFDIR=\(directory.file("etc"))"])
        XCTAssertEqual(install.status, 0, install.stdout + install.stderr)
        let units = prefix + "/lib/systemd/system"
        let verify = try runCommand(analyze, ["verify", "--man=no", units + "/stepd.service", units + "/stepd.socket",
                                              units + "/stepd-web.service"])
        XCTAssertEqual(verify.status, 0, verify.stdout + verify.stderr)
        XCTAssertFalse((verify.stdout + verify.stderr).contains("stepd."), "verify complains:\n\(verify.stdout)\(verify.stderr)")

        // docs/fleet.md's drop-in for a public broker: read by systemd (a bad address is named) and accepted.
        let dropIn = units + "/stepd.service.d"
        try FileManager.default.createDirectory(atPath: dropIn, withIntermediateDirectories: true)
        try "[Service]\nIPAddressAllow=not-an-address\n".write(toFile: dropIn + "/broker.conf", atomically: true, encoding: .utf8)
        let bad = try runCommand(analyze, ["verify", "--man=no", units + "/stepd.service", units + "/stepd.socket"])
        XCTAssertTrue((bad.stdout + bad.stderr).contains("broker.conf:2: Address prefix is invalid"), bad.stdout + bad.stderr)
        try "[Service]\nIPAddressAllow=203.0.113.10 100.64.0.0/10\n".write(toFile: dropIn + "/broker.conf", atomically: true, encoding: .utf8)
        let allowed = try runCommand(analyze, ["verify", "--man=no", units + "/stepd.service", units + "/stepd.socket"])
        XCTAssertEqual(allowed.status, 0, allowed.stdout + allowed.stderr)
        XCTAssertFalse((allowed.stdout + allowed.stderr).contains("stepd."), "verify complains:\n\(allowed.stdout)\(allowed.stderr)")
        try FileManager.default.removeItem(atPath: dropIn)

        for unit in ["stepd.service", "stepd-web.service"] {
            let security = try runCommand(analyze, ["security", "--offline=true", "--no-pager", units + "/" + unit])
            let line = try XCTUnwrap((security.stdout + security.stderr).split(separator: "\n")
                .first { $0.contains("Overall exposure level for \(unit)") }, security.stdout + security.stderr)
            print(line)
            let figure = try XCTUnwrap(line.split(separator: " ").compactMap { Double($0) }.first, String(line))
            XCTAssertLessThan(figure, 2.5, unit)
        }

        let sysusers = try runCommand("/usr/bin/systemd-sysusers", ["--dry-run", "--root=\(directory.file("sysroot"))",
                                                                   prefix + "/lib/sysusers.d/stepd.conf",
                                                                   prefix + "/lib/sysusers.d/stepd-web.conf"])
        XCTAssertEqual(sysusers.status, 0, sysusers.stderr)
        for user in ["stepd", "stepd-web"] {
            XCTAssertTrue((sysusers.stdout + sysusers.stderr).contains("Creating user '\(user)'"), sysusers.stdout + sysusers.stderr)
        }
    }
}
