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
    @Flag(.named("demo")) var demo: Bool
    @Option(.named("socket")) var socket: String?
    @Option(.named("detector")) var detector: String
    @Option(.named("height")) var height: Double
    @Option(.named("max_clients")) var maxClients: Int
    @Option(.named("max_clients_per_user")) var maxClientsPerUser: Int
    @Option(.named("reserved_clients")) var reservedClients: Int
    @Option(.named("max_requests_in_flight")) var maxRequestsInFlight: Int
    @Option(.named("max_unsent_kib")) var maxUnsentKib: Int
    @Option(.named("admin_group")) var adminGroup: String?
    @Option(.named("log_level")) var logLevel: String

    @OptionGroup(title: "IIO accelerometer")
    var iio: IIOOptions

    // stepd.conf, the state directory, retention (ServiceOptions.swift); flags override the file.
    @OptionGroup var service: ServiceOptions

    @OptionGroup(title: "Position (gpsd)") var gps: GPSOptions

    @OptionGroup(title: "MQTT (a fleet of devices, docs/fleet.md)") var mqtt: MQTTOptions

    func validate() throws {
        try gps.validate()
        try mqtt.validate()
        try iio.validate()
        if demo && replay != nil {
            throw ValidationError("--demo plays the bundled recording and --replay another one: give one of them")
        }
    }

    mutating func run() throws {
        if iio.listDevices { return try iio.listAccelerometers() }
        CrashTrace.enableByRestarting()  // first: it may start this process again, with the backtracer set
        try applyConfigurationFile()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let style = DaemonLogHandler.Style.detect()
        LoggingSystem.bootstrap { DaemonLogHandler(label: $0, level: level, style: style) }
        let logger = Logger(label: "stepd")
        ShutdownHandler.catchSignals(logger: logger)
        do { try start(logger: logger) } catch let failure as StartFailure { throw failure.exit() }
        dispatchMain()
    }

    /// Everything up to serving: a failure here is a StartFailure with its reason and exit status.
    private mutating func start(logger: Logger) throws {
        // The source first: a recording that cannot be replayed stops the daemon before it touches the store.
        let source = try chooseSource(logger: logger)
        var engineConfiguration = Engine.Configuration()
        engineConfiguration.detector = StepDetectorKind(rawValue: detector)!
        engineConfiguration.heightMeters = height
        let gpsSource = try gps.makeSource(configuring: &engineConfiguration.location)
        let fleetConfiguration = try mqtt.configuration()
        let engine = Engine(configuration: engineConfiguration)
        // A demo keeps its history in a directory of its own, removed at exit (SourceChoice.swift).
        let demoState: DemoStateDirectory?
        do { demoState = demo ? try DemoStateDirectory() : nil } catch {
            throw StartFailure(description: "\(error)", status: .cantCreate)
        }
        if let demoState { service.stateDir = demoState.path }
        do {
            try serve(source: source, engine: engine, gpsSource: gpsSource, fleet: fleetConfiguration, demoState: demoState,
                      logger: logger)
        } catch {
            demoState?.remove()
            throw error
        }
    }

    private func serve(source: SourceChoice.Chosen, engine: Engine, gpsSource: GPSDSource?, fleet fleetConfiguration: FleetConfiguration?,
                       demoState: DemoStateDirectory?, logger: Logger) throws {
        engine.attach(source: source.source)
        let runtime = ServiceRuntime(options: service, engine: engine, logger: logger)
        runtime.openStore()
        // Before the source starts, so that no step or visit goes by unpublished.
        let fleet = fleetConfiguration.map { FleetPublisher(configuration: $0, store: runtime.store, engine: engine) }
        do { try fleet?.start() } catch { throw StartFailure(description: "\(error)", status: .config) }

        let passed: (descriptor: CInt, path: String?)?
        do { passed = try runtime.passedSocket() } catch {
            throw StartFailure(description: "the socket systemd passed cannot be served: \(error)", status: .cantCreate)
        }
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
        server.fleet = fleet
        do {
            if let passed { try server.start(adoptingListeningSocket: passed.descriptor) } else { try server.start() }
        } catch { throw StartFailure.serving(error) }

        source.start(sink: engine)
        let barometer = BarometerChoice.start(for: source, options: iio, engine: engine, logger: logger)
        gpsSource?.start(sink: engine)
        print(SourceChoice.banner(for: source))
        print("stepd: listening on \(socketPath)")
        print("stepd: try   stepctl --socket \(socketPath) steps")
        print("stepd:  or   echo '{\"cmd\":\"steps\"}' | socat - UNIX-CONNECT:\(socketPath)")
        fflush(stdout)
        runtime.notifyReady(server: server)

        ShutdownHandler.whenSignalled(state: { runtime.statusText() + "; \(server.clientCount) clients" }) {
            source.source.stop()
            barometer?.stop()
            gpsSource?.stop()
            fleet?.stop()
            runtime.stop()
            server.stop()
            demoState?.remove()
        }
    }

    /// The accelerometer, or the recording asked for (SourceChoice.swift); a recording that cannot be read
    /// says why, with 66 for a file that is not there or not readable and 65 for one that is not a recording.
    private func chooseSource(logger: Logger) throws -> SourceChoice.Chosen {
        do {
            return try SourceChoice(demo: demo, replay: replay, speed: speed, loop: loop,
                                    device: iio.device, iioURI: iio.iioURI,
                                    barometer: !iio.noBarometer).makeSource(logger: logger)
        } catch let error as RecordingError {
            throw StartFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        } catch let error as PressureFileError {
            throw StartFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        }
    }
}
