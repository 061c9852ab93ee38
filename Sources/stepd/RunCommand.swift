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

    // Each flag is declared once, in ConfigOption.all (Sources/StepService/Config/ConfigOption.swift), with
    // its stepd.conf key, range, default and help; here it only gets its Swift type.
    @Option(.named("replay")) var replay: String?
    @Option(.named("speed")) var speed: Double
    @Flag(.named("loop")) var loop: Bool
    @Option(.named("socket")) var socket: String?
    @Option(.named("detector")) var detector: String
    @Option(.named("height")) var height: Double
    @Option(.named("max_clients")) var maxClients: Int
    @Option(.named("max_unsent_kib")) var maxUnsentKib: Int
    @Option(.named("admin_group")) var adminGroup: String?
    @Option(.named("log_level")) var logLevel: String

    @OptionGroup(title: "IIO accelerometer")
    var iio: IIOOptions

    // stepd.conf, the state directory, retention (ServiceOptions.swift); flags override the file.
    @OptionGroup var service: ServiceOptions

    @OptionGroup(title: "Position (gpsd)") var gps: GPSOptions

    func validate() throws {
        try gps.validate()
    }

    mutating func run() throws {
        if iio.listDevices { return try iio.listAccelerometers() }
        try applyConfigurationFile()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let style = DaemonLogHandler.Style.detect()
        LoggingSystem.bootstrap { DaemonLogHandler(label: $0, level: level, style: style) }
        do { try start(logger: Logger(label: "stepd")) } catch let failure as StartFailure { throw failure.exit() }
        dispatchMain()
    }

    /// Everything up to serving: a failure here is a StartFailure with its reason and exit status.
    private func start(logger: Logger) throws {
        // The source first: a recording that cannot be replayed stops the daemon before it touches the store.
        let source = try chooseSource(logger: logger)
        var engineConfiguration = Engine.Configuration()
        engineConfiguration.detector = StepDetectorKind(rawValue: detector)!
        engineConfiguration.heightMeters = height
        let gpsSource = try gps.makeSource(configuring: &engineConfiguration.location)
        let engine = Engine(configuration: engineConfiguration)
        let runtime = ServiceRuntime(options: service, engine: engine, logger: logger)
        runtime.openStore()

        let passed: (descriptor: CInt, path: String?)?
        do { passed = try runtime.passedSocket() } catch {
            throw StartFailure(description: "the socket systemd passed cannot be served: \(error)", status: .cantCreate)
        }
        let socketPath = try passed.map { $0.path ?? "(passed by systemd)" } ?? socket ?? DaemonSocket.choose(logger: logger)
        var serverConfiguration = ProtocolServer.Configuration(socketPath: socketPath)
        serverConfiguration.maximumClients = maxClients
        serverConfiguration.adminGroup = adminGroup
        serverConfiguration.maximumUnsentBytes = maxUnsentKib * 1024
        let server = ProtocolServer(configuration: serverConfiguration, engine: engine)
        server.store = runtime.store
        do {
            if let passed { try server.start(adoptingListeningSocket: passed.descriptor) } else { try server.start() }
        } catch { throw StartFailure.serving(error) }

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
    }

    private func chooseSource(logger: Logger) throws -> SampleSource {
        if let accelerometer = iio.source(replayGiven: replay != nil, logger: logger) { return accelerometer }
        if let replay {
            logger.debug("source: the recording \(replay) (--replay), at \(speed)× real time\(loop ? ", looping" : "")")
            return try openRecording(replay, loop: loop)
        }
        guard let bundled = DefaultRecording.locate() else {
            throw StartFailure(description: "no accelerometer and no bundled recording found; pass --replay FILE", status: .noInput)
        }
        logger.notice("no accelerometer given: replaying the bundled recording \(bundled) in a loop")
        return try openRecording(bundled, loop: true)
    }

    private func openRecording(_ path: String, loop: Bool) throws -> SampleSource {
        try RecordingCheck.check(path)
        do { return try ReplaySource(path: path, speed: speed, loop: loop) } catch {
            throw RecordingCheck.explain(error, path: path)
        }
    }
}
