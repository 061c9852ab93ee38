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
}
