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

    @Option(help: "Replay speed: 1 is real time (default 1).")
    var speed: Double?

    @Flag(inversion: .prefixedNo, help: "Start the replay again when it ends, the clock carrying on (default no).")
    var loop: Bool?

    @Option(help: "The Unix socket to listen on (default \(SocketPath.system), else a per-user path).")
    var socket: String?

    @Option(help: "Step detector: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", ")) (default \(StepDetectorKind.default.rawValue)).")
    var detector: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (default info).")
    var logLevel: String?

    // Configuration file, state directory, retention: flags override stepd.conf (ServiceOptions.swift).
    @OptionGroup var service: ServiceOptions

    func run() throws {
        let settings = try DaemonSettings.resolve(self)
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "stepd")

        var engineConfiguration = Engine.Configuration()
        engineConfiguration.detector = settings.detector
        engineConfiguration.strideMeters = settings.strideMeters
        let engine = Engine(configuration: engineConfiguration)
        let runtime = ServiceRuntime(settings: settings, engine: engine, logger: logger)
        runtime.openStore()

        let source: SampleSource
        do {
            source = try chooseSource(settings, logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }

        let passed = try runtime.passedSocket()
        let socketPath = try passed.map { $0.path ?? "(passed by systemd)" } ?? settings.socket ?? DaemonSocket.choose(logger: logger)
        let server = ProtocolServer(configuration: .init(socketPath: socketPath), engine: engine)
        server.store = runtime.store
        do {
            if let passed { try server.start(adoptingListeningSocket: passed.descriptor) } else { try server.start() }
        } catch { throw ValidationError("\(error)") }

        engine.attach(source: source)
        source.start(sink: engine)
        print("stepd: counting steps from \(source.description)")
        print("stepd: listening on \(socketPath)")
        print("stepd: try   stepctl --socket \(socketPath) steps")
        print("stepd:  or   echo '{\"cmd\":\"steps\"}' | socat - UNIX-CONNECT:\(socketPath)")
        fflush(stdout)
        runtime.notifyReady(server: server)

        ShutdownHandler.install(logger: logger) {
            source.stop()
            runtime.stop()
            server.stop()
        }
        dispatchMain()
    }

    private func chooseSource(_ settings: DaemonSettings, logger: Logger) throws -> SampleSource {
        let speed = settings.speed
        if let replay = settings.replay {
            return try ReplaySource(path: replay, speed: speed, loop: settings.loop)
        }
        guard let bundled = DefaultRecording.locate() else {
            throw ValidationError("no accelerometer and no bundled recording found; pass --replay FILE")
        }
        logger.notice("no accelerometer given: replaying the bundled recording \(bundled) in a loop")
        return try ReplaySource(path: bundled, speed: speed, loop: true)
    }
}
