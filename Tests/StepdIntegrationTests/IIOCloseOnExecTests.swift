import Foundation
import XCTest

/// Every descriptor the IIO sources open (the device watchers' inotify, uevent socket and wake pipe while they
/// wait; libiio's device node while one reads) is close-on-exec: a program the daemon, or a library it links,
/// ever starts must not inherit them (a child holding a wake pipe or a device node open keeps them alive after
/// the source has let them go).
final class IIOCloseOnExecTests: XCTestCase {
    func testTheDescriptorsOfTheIIOSourcesAreCloseOnExec() throws {
        let device: [String: Any] = ["name": "bmi160", "recording": Binaries.bundledRecording, "trigger": true,
                                     "absent": true]
        let directory = try TemporaryDirectory()
        let socket = directory.file("stepd.sock")
        // No accelerometer and no barometer yet: both sources wait on their device watchers.
        let fake = try FakeIIO(devices: [device], command: [Binaries.stepd, "--socket", socket,
                                                            "--state-dir", directory.file("state"), "--no-gps"],
                               directory: directory)
        let daemon = FakeIIODaemon(socketPath: socket, fake: fake)
        try daemon.waitForSocket()
        try daemon.waitUntil(timeout: 30, "waiting") { $0.sourceState == "waiting" }
        let pid = try XCTUnwrap(Self.pid(ofProcessWithArgument: socket), "the daemon's process")
        // The barometer's watcher too: its wake pipe appears once it waits.
        let waiting = try pollFor("both watchers' wake pipes", timeout: 20, every: 0.05,
                                  detail: "\(Self.sourceDescriptors(of: pid))") {
            let descriptors = Self.sourceDescriptors(of: pid)
            return descriptors.filter { $0.target.hasPrefix("pipe:") }.count >= 4 ? descriptors : nil
        }
        XCTAssertGreaterThanOrEqual(waiting.filter { $0.target.hasPrefix("pipe:") }.count, 4,
                                    "two watchers' wake pipes: \(waiting)")
        XCTAssertEqual(waiting.filter { !$0.closeOnExec }.map(\.description), [], "descriptors a child would inherit")

        try fake.control("add iio:device0")
        try daemon.waitUntil(timeout: 20, "reading the device") { $0.sourceState == "running" }
        let reading = Self.sourceDescriptors(of: pid)
        XCTAssertTrue(reading.contains { $0.target.hasPrefix("/dev/iio:") }, "libiio's device node: \(reading)")
        XCTAssertEqual(reading.filter { !$0.closeOnExec }.map(\.description), [], "descriptors a child would inherit")
        XCTAssertEqual(fake.terminate(), 0)
    }

    struct Descriptor: CustomStringConvertible {
        var fd: Int32
        var target: String
        var closeOnExec: Bool
        var description: String { "\(fd) -> \(target)\(closeOnExec ? "" : " (inherited by a child)")" }
    }

    /// The descriptors of `pid` that the IIO sources open: pipes, inotify, netlink sockets, IIO device nodes. (The
    /// socket server's listening socket and event loop are swift-nio's, outside the sources.)
    static func sourceDescriptors(of pid: Int32) -> [Descriptor] {
        let netlink = Set(procFileText("/proc/net/netlink")
            .split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ").last.map(String.init) })
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap(Int32.init)
        return fds.filter { $0 > 2 }.sorted().compactMap { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8),
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                  let flags = Int(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
            else { return nil }   // closed meanwhile
            let inode = target.hasPrefix("socket:[") ? String(target.dropFirst(8).dropLast()) : ""
            guard target.hasPrefix("pipe:") || target == "anon_inode:inotify" || target.hasPrefix("/dev/iio:")
                    || netlink.contains(inode) else { return nil }
            return Descriptor(fd: fd, target: target + (netlink.contains(inode) ? " (netlink)" : ""),
                              closeOnExec: flags & Int(O_CLOEXEC) != 0)
        }
    }

    /// The process whose command line holds `argument` (the daemon, inside the fake devices' mount namespace,
    /// shares the tests' process namespace).
    static func pid(ofProcessWithArgument argument: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if words.first?.hasSuffix("/stepd") == true, words.contains(argument) { return pid }
        }
        return nil
    }
}
