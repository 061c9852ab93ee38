import Foundation
import XCTest

/// stepd's udev rules through udev's own parser: `udevadm test` in a private mount namespace where the
/// rules folders hold only our files, so the host's rules and udev database are not touched.
final class ServiceUdevTests: XCTestCase {
    func testRulesParseWithoutErrors() throws {
        let udevadm = "/usr/bin/udevadm", unshare = "/usr/bin/unshare"
        guard FileManager.default.isExecutableFile(atPath: udevadm) else { throw XCTSkip("udevadm is not installed (package udev)") }
        guard FileManager.default.isExecutableFile(atPath: unshare), getuid() == 0 else {
            throw XCTSkip("needs root and unshare for a private mount namespace")
        }
        let directory = try TemporaryDirectory()
        let rules = directory.file("rules")
        try FileManager.default.createDirectory(atPath: rules, withIntermediateDirectories: true)
        let udev = Binaries.repository.appendingPathComponent("udev")
        try FileManager.default.copyItem(atPath: udev.appendingPathComponent("60-stepd.rules").path,
                                         toPath: rules + "/60-stepd.rules")
        try FileManager.default.copyItem(atPath: udev.appendingPathComponent("81-stepd-no-sensor-proxy.rules.example").path,
                                         toPath: rules + "/81-stepd-no-sensor-proxy.rules")
        // A broken rule beside them proves that this way of asking udev does report mistakes.
        try "SUBSYSTEM==\"iio\", NOT A RULE\n".write(toFile: rules + "/99-broken.rules", atomically: true, encoding: .utf8)
        let script = """
            set -e
            mount --bind '\(rules)' /usr/lib/udev/rules.d
            for d in /etc/udev/rules.d /run/udev /usr/local/lib/udev/rules.d; do
              if [ -d "$d" ]; then mount -t tmpfs none "$d"; fi
            done
            exec \(udevadm) test --action=add /sys/class/net/lo
            """
        let result = try runCommand(unshare, ["--mount", "--propagation", "private", "/bin/sh", "-c", script], timeout: 60)
        let output = result.stdout + result.stderr
        guard result.status == 0 else { throw XCTSkip("udevadm test could not run here: \(output.suffix(400))") }
        XCTAssertTrue(output.contains("Reading rules file: /usr/lib/udev/rules.d/60-stepd.rules"), output)
        XCTAssertTrue(output.contains("Reading rules file: /usr/lib/udev/rules.d/81-stepd-no-sensor-proxy.rules"), output)
        XCTAssertTrue(output.contains("99-broken.rules:1 Invalid key/value pair"), output)
        let complaints = output.split(separator: "\n").filter {
            ($0.contains("60-stepd.rules:") || $0.contains("81-stepd-no-sensor-proxy.rules:"))
                // Before systemd-sysusers has run, the group does not exist yet: udev says so and goes on.
                && !$0.contains("Unknown group 'stepd'")
        }
        XCTAssertEqual(complaints, [], output)
    }

    /// The rule's RUN program on a copy of an IIO device's sysfs layout: exactly the attributes stepd writes
    /// become group-writable, never the read-only ones. (Group `nogroup` stands in for `stepd`, which a test
    /// must not create on the host.)
    func testRunProgramOpensOnlyTheWritableAttributesStepdUses() throws {
        guard getuid() == 0 else { throw XCTSkip("chgrp to another group needs root") }
        let rulesText = try String(contentsOf: Binaries.repository.appendingPathComponent("udev/60-stepd.rules"), encoding: .utf8)
        let line = try XCTUnwrap(rulesText.split(separator: "\n").first { $0.hasPrefix("RUN+=") && $0.contains("find buffer") })
        let script = try XCTUnwrap(line.firstIndex(of: "'").flatMap { first in
            line.lastIndex(of: "'").map { String(line[line.index(after: first)..<$0]) } })
        let directory = try TemporaryDirectory()
        let device = directory.file("iio:device0")
        let files: [(String, Int)] = [
            ("buffer/enable", 0o644), ("buffer/length", 0o644), ("buffer/data_available", 0o444),
            ("scan_elements/in_accel_x_en", 0o644), ("scan_elements/in_accel_x_type", 0o444),
            ("scan_elements/in_accel_x_index", 0o444), ("trigger/current_trigger", 0o644),
            ("sampling_frequency", 0o644), ("in_accel_x_raw", 0o444), ("name", 0o444), ("in_accel_scale", 0o644),
        ]
        for (name, mode) in files {
            let path = device + "/" + name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: path, contents: Data("0\n".utf8), attributes: [.posixPermissions: mode])
        }
        let command = script.replacingOccurrences(of: "%S%p", with: device).replacingOccurrences(of: "chgrp stepd", with: "chgrp nogroup")
        let result = try runCommand("/bin/sh", ["-c", command])
        XCTAssertEqual(result.status, 0, result.stderr)
        let opened = Set(["buffer/enable", "buffer/length", "scan_elements/in_accel_x_en", "trigger/current_trigger",
                          "sampling_frequency"])
        for (name, _) in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: device + "/" + name)
            let group = attributes[.groupOwnerAccountName] as? String
            let mode = (attributes[.posixPermissions] as? Int) ?? 0
            if opened.contains(name) {
                XCTAssertEqual(group, "nogroup", name)
                XCTAssertEqual(mode & 0o020, 0o020, "\(name) is not group-writable")
            } else {
                XCTAssertNotEqual(group, "nogroup", "\(name) must stay as it was")
                XCTAssertEqual(mode & 0o020, 0, "\(name) must not become group-writable")
            }
        }
    }
}
