import Foundation
import XCTest

/// Runs commands beside fake IIO devices made by Tests/fixtures/fake-iio: a sysfs tree at /sys/bus/iio and FIFOs at
/// /dev/iio:deviceN, private to a mount namespace, read by the real libiio. Needs root and unshare.
final class FakeIIO {
    let directory: TemporaryDirectory
    let process = Process()
    let logPath: String
    var controlPath: String { directory.file("control") }
    var dumpDirectory: String { directory.file("dump") }
    var specPath: String { directory.file("spec.json") }

    static var script: String { Binaries.repository.appendingPathComponent("Tests/fixtures/fake-iio").path }

    static func requireNamespaces() throws {
        guard getuid() == 0 else { throw XCTSkip("fake IIO devices need root (mount namespaces)") }
        for tool in ["/usr/bin/unshare", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is missing")
        }
    }

    /// Starts `command` inside the namespace with `devices` (fake-iio spec entries); returns at once.
    init(devices: [[String: Any]], speed: Double = 1, command: [String], directory: TemporaryDirectory? = nil) throws {
        try Self.requireNamespaces()
        self.directory = try directory ?? TemporaryDirectory()
        logPath = self.directory.file("fake-iio.log")
        let spec = try JSONSerialization.data(withJSONObject: ["devices": devices], options: [.prettyPrinted])
        try spec.write(to: URL(fileURLWithPath: specPath))
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)!
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "run", "--spec", specPath, "--control", controlPath,
                             "--dump-dir", dumpDirectory, "--speed", "\(speed)", "--"] + command
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// Runs `command` beside the devices to completion and returns what it printed.
    static func run(devices: [[String: Any]], command: [String]) throws -> CommandResult {
        try requireNamespaces()
        let directory = try TemporaryDirectory()
        let spec = try JSONSerialization.data(withJSONObject: ["devices": devices])
        try spec.write(to: URL(fileURLWithPath: directory.file("spec.json")))
        return try runCommand("/usr/bin/python3", [script, "run", "--spec", directory.file("spec.json"), "--"] + command,
                              timeout: 60)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Unplugs or replugs a device: `control("remove iio:device0")`, `control("add iio:device0")`.
    func control(_ line: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: controlPath) && Date() < deadline { usleep(20_000) }  // poll interval of a wait for a state, not a fixed wait
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: controlPath), "control FIFO")
        handle.write(Data((line + "\n").utf8))
        try handle.close()
    }

    /// The samples fake-iio fed for a device (board axes, t,x,y,z), as `stepd analyze` reads them.
    func dumpFile(_ id: String = "iio:device0") -> String { directory.file("dump/\(id).csv") }

    func dumpedSampleCount(_ id: String = "iio:device0") -> Int {
        let text = (try? String(contentsOfFile: dumpFile(id), encoding: .utf8)) ?? ""
        return max(0, text.split(separator: "\n").count - 1)
    }

    func dumpedSamples(_ id: String = "iio:device0") throws -> [(t: Double, x: Double, y: Double, z: Double)] {
        let text = try String(contentsOfFile: dumpFile(id), encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let v = line.split(separator: ",").compactMap { Double($0) }
            return v.count == 4 ? (v[0], v[1], v[2], v[3]) : nil
        }
    }

    @discardableResult
    func terminate() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }
}

/// A stepd started by FakeIIO, reached through its socket from outside the namespace (/tmp is shared).
struct FakeIIODaemon {
    let socketPath: String
    let fake: FakeIIO

    func connect() throws -> SocketClient { try SocketClient(path: socketPath) }

    func waitForSocket(timeout: TimeInterval = 30) throws {
        try pollUntil("stepd to listen on \(socketPath)", timeout: timeout, detail: "log:\n\(fake.log)") {
            if let client = try? SocketClient(path: socketPath) {
                client.close()
                return true
            }
            guard fake.process.isRunning else { throw ProcessExited(what: "fake-iio", log: fake.log) }
            return false
        }
    }

    func status() throws -> [String: Any] { try connect().request(["cmd": "status"]) }

    /// The daemon's process (inside fake-iio's namespace, which shares the PID space): the `stepd` whose command
    /// line names this socket.
    func processID() throws -> pid_t {
        for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") {
            guard let pid = pid_t(entry),
                  let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == "stepd",
                  let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                  String(decoding: command, as: UTF8.self).contains(socketPath) else { continue }
            return pid
        }
        throw ProcessExited(what: "no stepd naming \(socketPath)", log: fake.log)
    }
    func steps() throws -> [String: Any] { try connect().request(["cmd": "steps"]) }

    /// Polls STATUS until `condition` holds and returns that STATUS; a timeout fails the test.
    @discardableResult
    func waitUntil(timeout: TimeInterval = 60, _ what: String, file: StaticString = #filePath, line: UInt = #line,
                   _ condition: ([String: Any]) throws -> Bool) throws -> [String: Any] {
        let client = try connect()
        return try pollFor(what, timeout: timeout, every: 0.1, detail: "log:\n\(fake.log)", file: file, line: line) {
            let status = try client.request(["cmd": "status"])
            return try condition(status) ? status : nil
        }
    }

    /// Waits until the daemon has taken in every sample fake-iio fed (the feed ended: `once`).
    func waitForAllSamples(of id: String = "iio:device0", timeout: TimeInterval = 120) throws -> [String: Any] {
        var lastCount = -1
        var stableSince = Date()
        return try waitUntil(timeout: timeout, "every fed sample to arrive") { status in
            let fed = fake.dumpedSampleCount(id)
            let taken = status["samples_in"] as? Int ?? -1
            if fed != lastCount { lastCount = fed; stableSince = Date() }
            return fed > 0 && taken == fed && Date().timeIntervalSince(stableSince) > 1.5
        }
    }

    /// How many times the daemon's thread `stepd.barometer` went to sleep (voluntary context switches, what
    /// scripts/bench-iio counts) over `seconds`. The daemon is the process whose command line names its socket.
    func barometerThreadWakeUps(seconds: Double) throws -> Int {
        func switches() throws -> Int {
            for pid in try FileManager.default.contentsOfDirectory(atPath: "/proc") where Int(pid) != nil {
                guard let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                      String(decoding: command, as: UTF8.self).contains(socketPath),
                      let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { continue }
                for task in tasks {
                    let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
                    guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == "stepd.barometer",
                          let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                          let count = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else { continue }
                    return count
                }
            }
            throw ProcessExited(what: "no thread stepd.barometer in a process naming \(socketPath)", log: fake.log)
        }
        let before = try switches()
        Thread.sleep(forTimeInterval: seconds)  // the window the wake-ups are counted over, not a wait for an event
        return try switches() - before
    }
}

extension [String: Any] {
    var sourceState: String? { (self["source"] as? [String: Any])?["state"] as? String }
    var sourceError: String? { (self["source"] as? [String: Any])?["error"] as? String }
    var sourceKind: String? { (self["source"] as? [String: Any])?["kind"] as? String }
    var sourceDescription: String? { (self["source"] as? [String: Any])?["description"] as? String }
}
