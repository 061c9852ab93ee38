import Foundation
import XCTest

/// A real Mosquitto broker (Debian `mosquitto`) on a free loopback port, with persistence in its own folder so
/// that a restart keeps retained messages and a persistent subscriber's queue, as a production broker does.
final class MosquittoBroker {
    let port: Int
    let directory: TemporaryDirectory
    let configPath: String
    let logPath: String
    private var process: Process?

    /// `listener` lines go into mosquitto.conf after the listener's own (TLS files, password file). `started`
    /// false: configured on its port, started later with `start()` (a broker that comes after the daemon).
    init(directory: TemporaryDirectory, listener: [String] = [], anonymous: Bool = true, port: Int = GPSDFake.freePort(),
         started: Bool = true) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto") else {
            throw XCTSkip("mosquitto is not installed (scripts/setup installs it)")
        }
        self.port = port
        self.directory = directory
        configPath = directory.file("mosquitto-\(port).conf")
        logPath = directory.file("mosquitto-\(port).log")
        let persistence = directory.file("mosquitto-\(port)") + "/"
        try FileManager.default.createDirectory(atPath: persistence, withIntermediateDirectories: true)
        let lines = [
            "listener \(port) 127.0.0.1",
            // Run as root by the tests, mosquitto would drop to its own user, which cannot write here.
            getuid() == 0 ? "user root" : "",
            "allow_anonymous \(anonymous)",
            "persistence true",
            "persistence_location \(persistence)",
            "log_dest file \(logPath)",
            "log_type all",
        ] + listener
        try lines.joined(separator: "\n").appending("\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        if started { try start() }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", configPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try pollUntil("mosquitto to listen on \(port)", timeout: 10, every: 0.01, detail: String(log.suffix(2000))) {
            if GPSDFake.accepts(port: port) { return true }
            guard process.isRunning else { throw ProcessExited(what: "mosquitto", log: String(log.suffix(2000))) }
            return false
        }
    }

    /// SIGTERM: the broker saves its persistence file and exits.
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    deinit {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }
}

/// `mosquitto_sub` (Debian `mosquitto-clients`) writing `time qos topic payload` lines to a file as they arrive:
/// the time it received each message (so a test can see a publisher's rate) and the QoS it came with.
final class MosquittoSubscriber {
    let process = Process()
    let outputPath: String

    init(broker: MosquittoBroker, topics: [String], arguments: [String] = []) throws {
        outputPath = broker.directory.file("sub-\(UUID().uuidString.prefix(6)).txt")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        // %U: Unix time with nanoseconds; %q: the QoS delivered, the lower of the publisher's and the subscription's.
        process.arguments = ["-h", "127.0.0.1", "-p", String(broker.port), "-F", "%U %q %t %p"]
            + topics.flatMap { ["-t", $0] } + arguments
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    struct Message {
        /// When mosquitto_sub received it.
        var received: Date
        var qos: Int
        var topic: String
        var payload: String
    }

    /// The messages received so far, in the order they arrived.
    var received: [Message] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let time = Double(fields[0]), let qos = Int(fields[1]) else { return nil }
            return Message(received: Date(timeIntervalSince1970: time), qos: qos, topic: String(fields[2]), payload: String(fields[3]))
        }
    }

    /// The (topic, payload) pairs received so far.
    var messages: [(topic: String, payload: String)] { received.map { ($0.topic, $0.payload) } }

    /// Polls until `condition` holds for the messages received and returns them; a timeout fails the test.
    @discardableResult
    func waitFor(_ what: String, timeout: TimeInterval = 20,
                 _ condition: ([(topic: String, payload: String)]) -> Bool) throws -> [(topic: String, payload: String)] {
        try pollFor("mosquitto_sub to receive \(what)", timeout: timeout, detail: "got \(messages.suffix(20))") {
            let received = messages
            return condition(received) ? received : nil
        }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
}

/// The retained messages of `topics` now: a fresh `mosquitto_sub --retained-only`, stopped after a quiet second.
func retainedMessages(broker: MosquittoBroker, topics: [String], arguments: [String] = []) throws -> [String: String] {
    let result = try runCommand("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", String(broker.port), "-v",
                                                          "--retained-only", "-W", "1"] + topics.flatMap { ["-t", $0] } + arguments,
                                timeout: 10)
    var retained: [String: String] = [:]
    for line in result.stdout.split(separator: "\n") {
        guard let space = line.firstIndex(of: " ") else { continue }
        retained[String(line[..<space])] = String(line[space...].dropFirst())
    }
    return retained
}

/// A test CA made now (`<authority>.crt` and `.key` in `directory`), and the certificates it signs: each
/// `<name>.crt` with its `<name>.key`, for `subject`, with a subjectAltName when given (`IP:127.0.0.1`).
func makeTestCertificates(in directory: TemporaryDirectory, authority: String = "ca",
                          signed: [(name: String, subject: String, subjectAltName: String?)]) throws {
    func openssl(_ arguments: [String]) throws {
        let result = try runCommand("/usr/bin/openssl", arguments, timeout: 30)
        XCTAssertEqual(result.status, 0, "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
    }
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try openssl(["req", "-x509"] + ec + ["-keyout", directory.file("\(authority).key"), "-out", directory.file("\(authority).crt"),
                                       "-days", "2", "-subj", "/CN=stepd test CA \(authority)"])
    for (name, subject, subjectAltName) in signed {
        var extensions: [String] = []
        if let subjectAltName {
            try "subjectAltName=\(subjectAltName)\n".write(toFile: directory.file("\(name).ext"), atomically: true, encoding: .utf8)
            extensions = ["-extfile", directory.file("\(name).ext")]
        }
        try openssl(["req"] + ec + ["-keyout", directory.file("\(name).key"), "-out", directory.file("\(name).csr"), "-subj", subject])
        try openssl(["x509", "-req", "-in", directory.file("\(name).csr"), "-CA", directory.file("\(authority).crt"),
                     "-CAkey", directory.file("\(authority).key"), "-CAcreateserial", "-days", "2",
                     "-out", directory.file("\(name).crt")] + extensions)
    }
}
