import Foundation
import StepEngine
import StepFleet
import StepLogging
import StepServer
import StepService
import StepStore
import XCTest

/// The pure parts of socket activation and the watchdog: what the environment variables mean.
final class SystemdProtocolTests: XCTestCase {
    func testSocketsPassedToThisProcessStartAtDescriptorThreeWithTheirNames() throws {
        let sockets = try SocketActivation.parse(
            environment: ["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "stepd.sock:other"], pid: 4242)
        XCTAssertEqual(sockets, [.init(descriptor: 3, name: "stepd.sock"), .init(descriptor: 4, name: "other")])
    }

    func testSocketsMeantForAnotherProcessAreIgnored() throws {
        XCTAssertEqual(try SocketActivation.parse(environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"], pid: 4242), [])
        XCTAssertEqual(try SocketActivation.parse(environment: [:], pid: 4242), [])
    }

    func testMalformedVariablesAreErrors() {
        XCTAssertThrowsError(try SocketActivation.parse(environment: ["LISTEN_PID": "x", "LISTEN_FDS": "1"], pid: 1))
        XCTAssertThrowsError(try SocketActivation.parse(environment: ["LISTEN_PID": "7", "LISTEN_FDS": "-1"], pid: 7)) {
            XCTAssertEqual($0 as? SocketActivationError, .badVariable(name: "LISTEN_FDS", value: "-1"))
        }
    }

    func testMissingNamesLeaveSocketsUnnamed() throws {
        let sockets = try SocketActivation.parse(environment: ["LISTEN_PID": "9", "LISTEN_FDS": "2", "LISTEN_FDNAMES": ":b"], pid: 9)
        XCTAssertEqual(sockets.map(\.name), [nil, "b"])
    }

    func testWatchdogPingsAtHalfTheTimeout() {
        XCTAssertEqual(Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: 5), 15)
        XCTAssertEqual(Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "5"], pid: 5), 15)
        XCTAssertNil(Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "6"], pid: 5))
        XCTAssertNil(Notifier.watchdogInterval(environment: [:], pid: 5))
        XCTAssertNil(Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: 5))
    }

    func testNotifierReachesADatagramSocket() throws {
        let path = "/tmp/stepd-notify-\(UUID().uuidString.prefix(8))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        let notifier = try XCTUnwrap(Notifier.fromEnvironment(["NOTIFY_SOCKET": path]))
        notifier.ready(status: "12 steps\nsince now")
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        XCTAssertGreaterThan(n, 0)
        let lines = String(decoding: buffer[0..<max(n, 0)], as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.first, "READY=1")
        XCTAssertTrue(lines.contains("STATUS=12 steps since now"), "\(lines)")
        XCTAssertNil(Notifier.fromEnvironment(["NOTIFY_SOCKET": "relative/path"]))
    }
}
