import ArgumentParser
import Dispatch
import Foundation
import Logging
import StepAcquisition
import StepProcessing
import StepProtocol
import StepService

/// The daemon itself: picks a source, starts the engine and the socket server, runs until SIGTERM/SIGINT.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon (the default command).")

    @Option(help: "Replay a t,x,y,z recording (CSV, plain or gzip) instead of reading a sensor.")
    var replay: String?

    @Option(help: "Replay speed: 1 is real time.")
    var speed: Double = 1

    @Flag(help: "Start the replay again when it ends, the clock carrying on.")
    var loop = false

    @Option(help: "The Unix socket to listen on (default \(SocketPath.system), else a per-user path).")
    var socket: String?

    @Option(help: "Step detector: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var detector: String = StepDetectorKind.default.rawValue

    @Option(help: "The walker's height in metres, for the stride length until GPS calibrates it.")
    var height: Double = 1.70

    @Option(help: "The most clients connected at once; the next one gets an ERROR and is closed.")
    var maxClients: Int = 256

    @Option(help: "The most connections one user may hold (root and the admin group are not counted).")
    var maxClientsPerUser: Int = 32

    @Option(help: "Connection slots kept for root, the daemon's user and the admin group.")
    var reservedClients: Int = 8

    @Option(help: "Requests a connection may have waiting for an answer; a client past it is closed.")
    var maxRequestsInFlight: Int = 16

    @Option(help: "A watcher that leaves more than this many KiB unread is dropped; no reply starts while a client leaves that much unread.")
    var maxUnsentKib: Int = 64

    @Option(help: "A group whose members may reset the count (root and the daemon's own user always may).")
    var adminGroup: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @OptionGroup(title: "IIO accelerometer")
    var iio: IIOOptions

    // stepd.conf, the state directory, retention (ServiceOptions.swift); flags override the file.
    @OptionGroup var service: ServiceOptions

    @OptionGroup(title: "Position (gpsd)") var gps: GPSOptions

    func validate() throws {
        try gps.validate()
        guard StepDetectorKind(rawValue: detector) != nil else {
            throw ValidationError("unknown detector '\(detector)'; known: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard speed > 0, speed.isFinite else { throw ValidationError("--speed must be a positive number") }
        guard (0.5...2.5).contains(height) else { throw ValidationError("--height must be in metres, between 0.5 and 2.5") }
        guard maxUnsentKib > 0 else { throw ValidationError("--max-unsent-kib must be at least 1") }
        guard maxClients > 0 else { throw ValidationError("--max-clients must be at least 1") }
        guard maxClientsPerUser > 0 else { throw ValidationError("--max-clients-per-user must be at least 1") }
        guard reservedClients >= 0 else { throw ValidationError("--reserved-clients must be 0 or more") }
        guard maxRequestsInFlight > 0 else { throw ValidationError("--max-requests-in-flight must be at least 1") }
    }

    mutating func run() throws {
        if iio.listDevices { return try iio.listAccelerometers() }
        try applyConfigurationFile()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "stepd")

        var engineConfiguration = Engine.Configuration()
        engineConfiguration.detector = StepDetectorKind(rawValue: detector)!
        engineConfiguration.heightMeters = height
        let gpsSource = try gps.makeSource(configuring: &engineConfiguration.location)
        let engine = Engine(configuration: engineConfiguration)
        let runtime = ServiceRuntime(options: service, engine: engine, logger: logger)
        runtime.openStore()

        let source: SampleSource
        do {
            source = try chooseSource(logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }

        let passed = try runtime.passedSocket()
        let socketPath = try passed.map { $0.path ?? "(passed by systemd)" } ?? socket ?? DaemonSocket.choose(logger: logger)
        var serverConfiguration = ProtocolServer.Configuration(socketPath: socketPath)
        serverConfiguration.maximumClients = maxClients
        serverConfiguration.maximumClientsPerUser = maxClientsPerUser
        serverConfiguration.reservedClients = reservedClients
        serverConfiguration.maximumRequestsInFlight = maxRequestsInFlight
        serverConfiguration.adminGroup = adminGroup
        serverConfiguration.maximumUnsentBytes = maxUnsentKib * 1024
        let server = ProtocolServer(configuration: serverConfiguration, engine: engine)
        server.store = runtime.store
        do {
            if let passed { try server.start(adoptingListeningSocket: passed.descriptor) } else { try server.start() }
        } catch { throw ValidationError("\(error)") }

        engine.attach(source: source)
        source.start(sink: engine)
        gpsSource?.start(sink: engine)
        print("stepd: counting steps from \(source.description)")
        print("stepd: listening on \(socketPath)")
        print("stepd: try   stepctl --socket \(socketPath) steps")
        print("stepd:  or   echo '{\"cmd\":\"steps\"}' | socat - UNIX-CONNECT:\(socketPath)")
        fflush(stdout)
        runtime.notifyReady(server: server)

        ShutdownHandler.install(logger: logger) {
            source.stop()
            gpsSource?.stop()
            runtime.stop()
            server.stop()
        }
        dispatchMain()
    }

    private func chooseSource(logger: Logger) throws -> SampleSource {
        if let accelerometer = iio.source(replayGiven: replay != nil, logger: logger) { return accelerometer }
        if let replay {
            return try ReplaySource(path: replay, speed: speed, loop: loop)
        }
        guard let bundled = DefaultRecording.locate() else {
            throw ValidationError("no accelerometer and no bundled recording found; pass --replay FILE")
        }
        logger.notice("no accelerometer given: replaying the bundled recording \(bundled) in a loop")
        return try ReplaySource(path: bundled, speed: speed, loop: true)
    }
}
