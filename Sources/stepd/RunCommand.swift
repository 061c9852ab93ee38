import ArgumentParser
import Dispatch
import Foundation
import Locking
import Logging
import StepAcquisition
import StepEngine
import StepFleet
import StepProcessing
import StepProtocol
import StepServer
import StepService

/// The daemon itself: picks a source, starts the engine and the socket server, runs until SIGTERM/SIGINT.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon (the default command).")

    // Each flag is declared once, in ConfigOption.all (Sources/StepService/Config/ConfigOption.swift), with
    // its stepd.conf key, range, default and help; here it only gets its Swift type.
    @Option(.named("replay")) var replay: String?
    @Option(.named("speed")) var speed: Double
    @Flag(.named("loop")) var loop: Bool
    @Option(.named("units")) var units: String
    @Flag(.named("demo")) var demo: Bool
    @Option(.named("socket")) var socket: String?
    @Option(.named("detector")) var detector: String
    @Option(.named("height")) var height: Double
    @Option(.named("placement")) var placement: String
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
        MallocArenas.limit()
        try applyConfigurationFile()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let style = DaemonLogHandler.Style.detect()
        LoggingSystem.bootstrap { DaemonLogHandler(label: $0, level: level, style: style) }
        let logger = Logger(label: "stepd")
        ShutdownHandler.catchSignals(logger: logger)
        do { try start(logger: logger) } catch let failure as StartFailure { throw failure.exit() }
        ShutdownHandler.serve()
    }

    /// Everything up to serving: a failure here is a StartFailure with its reason and exit status.
    private mutating func start(logger: Logger) throws {
        // The source first: a recording that cannot be replayed stops the daemon before it touches the store.
        let source = try chooseSource(logger: logger)
        var engineConfiguration = Engine.Configuration()
        engineConfiguration.detector = StepDetectorKind(rawValue: detector)!
        engineConfiguration.heightMeters = height
        engineConfiguration.placement = Placement(rawValue: placement)!
        let gpsSource = try gps.makeSource(configuring: &engineConfiguration.location)
        let fleetConfiguration = try mqtt.configuration()
        let engine = Engine(configuration: engineConfiguration)
        // A demo keeps its history in a directory of its own, removed at exit (SourceChoice.swift).
        let demoState: DemoStateDirectory?
        do { demoState = demo ? try DemoStateDirectory() : nil } catch {
            throw StartFailure(description: "\(error)", status: .cantCreate)
        }
        if let demoState { service.stateDir = demoState.path }
        // A part that fails to start has the Lifecycle stop those before it, the demo's directory first of all.
        try serve(source: source, engine: engine, gpsSource: gpsSource, fleet: fleetConfiguration, demoState: demoState,
                  logger: logger)
    }

    /// Builds the daemon's parts and has a Lifecycle start them in dependency order (docs/architecture.md,
    /// "Start and stop"): each needs only those before it, and they stop in reverse on SIGTERM, or when a
    /// later one fails to start.
    private func serve(source: SourceChoice.Chosen, engine: Engine, gpsSource: GPSDSource?, fleet fleetConfiguration: FleetConfiguration?,
                       demoState: DemoStateDirectory?, logger: Logger) throws {
        let runtime = ServiceRuntime(options: service, engine: engine, logger: logger)
        let fleet = fleetConfiguration.map { FleetPublisher(configuration: $0, store: runtime.store, engine: engine) }
        let barometer = Held<IIOBarometerSource>()
        let iio = self.iio

        // Whether the daemon got as far as serving: a start that fails (another daemon on the socket) undoes
        // what it started without the goodbyes of a daemon that ran ("stopped ... saved", "demo over"), so that
        // its one line is the reason.
        let served = Held<Bool>()
        var parts: [Lifecycle.Part] = []
        if let demoState {
            parts.append(Lifecycle.Part("the demo's state directory", stop: { demoState.remove(announce: served.value == true) }))
        }
        let server = Held<ProtocolServer>()
        // Started before the store so that it stops after it: the socket server's event loop outlives the store's
        // readers and the engine, whose last replies hop onto it.
        parts.append(Lifecycle.Part("socket server's event loop", stop: { server.value?.shutDownEventLoop() }))
        // The last commit is what SIGTERM must not lose: the longest budget of all.
        parts.append(Lifecycle.Part("store", stopBudgetSeconds: 8, start: { try runtime.openStore() },
                                    stop: { runtime.closeStore(announce: served.value == true) }))
        // After the store, which restores the count into it; stopped before the store closes, so that every
        // step handed over reaches it.
        parts.append(Lifecycle.Part("engine", start: { engine.attach(source: source.source) }, stop: { engine.drain() }))
        // Before the sources start, so that no step or visit goes by unpublished.
        if let fleet {
            // The last STEPS and minutes, acknowledged, then DISCONNECT: FleetPublisher.stop's waits.
            parts.append(Lifecycle.Part("MQTT", stopBudgetSeconds: 5, start: {
                do { try fleet.start() } catch { throw StartFailure(description: "\(error)", status: .config) }
                engine.register(fleet)
            }, stop: {
                fleet.stop()
                engine.unregister(fleet)
            }))
        }
        let socketPath = Held<String>()
        parts.append(Lifecycle.Part("socket server", start: { [self] in
            let passed: (descriptor: CInt, path: String?)?
            do { passed = try runtime.passedSocket() } catch {
                throw StartFailure(description: "the socket systemd passed cannot be served: \(error)", status: .cantCreate)
            }
            let path = try passed.map { $0.path ?? "(passed by systemd)" } ?? socket ?? DaemonSocket.choose(logger: logger)
            let serving = ProtocolServer(configuration: serverConfiguration(socketPath: path), engine: engine)
            serving.store = runtime.store
            serving.fleet = fleet
            do {
                if let passed { try serving.start(adoptingListeningSocket: passed.descriptor) } else { try serving.start() }
            } catch { throw StartFailure.serving(error) }
            server.value = serving
            socketPath.value = path
            engine.register(serving)
        }, stop: {
            guard let serving = server.value else { return }
            engine.unregister(serving)
            serving.stop(keepingEventLoop: true)
        }))
        parts.append(Lifecycle.Part("accelerometer", start: { source.start(sink: engine) }, stop: { source.source.stop() }))
        parts.append(Lifecycle.Part("barometer", start: {
            barometer.value = BarometerChoice.start(for: source, options: iio, engine: engine, logger: logger)
        }, stop: { barometer.value?.stop() }))
        if let gpsSource {
            parts.append(Lifecycle.Part("gpsd", start: { gpsSource.start(sink: engine) }, stop: { gpsSource.stop() }))
        }
        // Last: READY once the socket accepts and the sources run; STOPPING first.
        parts.append(Lifecycle.Part("systemd notification", start: {
            guard let serving = server.value, let socketPath = socketPath.value else { return }
            print(SourceChoice.banner(for: source))
            print("stepd: listening on \(socketPath)")
            print("stepd: try   stepctl --socket \(socketPath) steps")
            print("stepd:  or   echo '{\"cmd\":\"steps\"}' | socat - UNIX-CONNECT:\(socketPath)")
            fflush(nil)
            served.value = true
            runtime.notifyReady(server: serving)
        }, stop: { runtime.notifyStopping() }))

        let lifecycle = Lifecycle(logger: logger)
        try lifecycle.start(parts)
        ShutdownHandler.whenSignalled(lifecycle: lifecycle, state: {
            runtime.statusText() + "; \(server.value?.clientCount ?? 0) clients"
        })
    }

    /// The socket server's limits, from the flags and stepd.conf.
    private func serverConfiguration(socketPath: String) -> ProtocolServer.Configuration {
        var configuration = ProtocolServer.Configuration(socketPath: socketPath)
        configuration.maximumClients = maxClients
        configuration.maximumClientsPerUser = maxClientsPerUser
        configuration.reservedClients = reservedClients
        configuration.maximumRequestsInFlight = maxRequestsInFlight
        configuration.adminGroup = adminGroup
        configuration.maximumUnsentBytes = maxUnsentKib * 1024
        return configuration
    }

    /// The accelerometer, or the recording asked for (SourceChoice.swift); a recording that cannot be read
    /// says why, with 66 for a file that is not there or not readable and 65 for one that is not a recording.
    private func chooseSource(logger: Logger) throws -> SourceChoice.Chosen {
        do {
            return try SourceChoice(demo: demo, replay: replay, speed: speed, loop: loop, units: RecordingUnits(rawValue: units) ?? .auto,
                                    device: iio.device, iioURI: iio.iioURI,
                                    barometer: !iio.noBarometer,
                                    sensorStepCounter: iio.sensorStepCounter).makeSource(logger: logger)
        } catch let error as RecordingError {
            throw StartFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        } catch let error as PressureFileError {
            throw StartFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError)
        }
    }
}

/// A value one part's start makes and its stop needs (the barometer, when there is one).
final class Held<Value: Sendable>: Sendable {
    private let held = Locked<Value?>(nil)
    var value: Value? {
        get { held.withLock { $0 } }
        set { held.withLock { $0 = newValue } }
    }
}
