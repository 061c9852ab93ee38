import Foundation
import Logging
import NIOCore
import NIOPosix
import StepProtocol

public let stepdRelease = "0.1.0"

/// Why the server could not start listening.
public enum ServerError: Error, CustomStringConvertible {
    case cannotCreateDirectory(path: String, reason: String)
    case socketInUse(path: String)
    case cannotBind(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let reason): return "cannot create socket directory \(path): \(reason)"
        case .socketInUse(let path): return "another daemon is already listening on \(path)"
        case .cannotBind(let path, let reason): return "cannot listen on \(path): \(reason)"
        }
    }
}

/// The Unix-socket server: newline-delimited JSON, one event loop. All per-client state (who watches what)
/// belongs to that loop; the engine's events hop onto it.
public final class ProtocolServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        public var socketMode: mode_t = 0o660
        public var maximumLineLength = 4096
        public init(socketPath: String) { self.socketPath = socketPath }
    }

    public let configuration: Configuration
    let engine: Engine
    private let logger: Logger
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var loop: EventLoop { group.any() }
    private var channel: Channel?
    private let startedAt = Date()

    // Owned by the event loop.
    private var clients: [ObjectIdentifier: Channel] = [:]
    private var watches: [ObjectIdentifier: Set<WatchClass>] = [:]

    public init(configuration: Configuration, engine: Engine, logger: Logger = Logger(label: "stepd.server")) {
        self.configuration = configuration
        self.engine = engine
        self.logger = logger
        let loop = group.next()
        engine.onEvent { [weak self] event in
            loop.execute { self?.broadcast(event) }
        }
    }

    /// Binds the socket (replacing a stale one left by a crash, never a live one) and starts accepting.
    public func start() throws {
        let path = configuration.socketPath
        try prepare(path: path)
        let maximumLineLength = configuration.maximumLineLength
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 128)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineFrameDecoder(maximumLength: maximumLineLength)))
                    try channel.pipeline.syncOperations.addHandler(
                        ClientHandler(server: self, maximumLineLength: maximumLineLength))
                }
            }
        do {
            channel = try bootstrap.bind(unixDomainSocketPath: path).wait()
        } catch {
            throw ServerError.cannotBind(path: path, reason: "\(error)")
        }
        chmod(path, configuration.socketMode)
        logger.info("listening on \(path)")
    }

    public func stop() {
        try? channel?.close().wait()
        let path = configuration.socketPath
        try? loop.submit { [self] in
            for client in clients.values { client.close(promise: nil) }
        }.wait()
        unlink(path)
        try? group.syncShutdownGracefully()
    }

    private func prepare(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            } catch {
                throw ServerError.cannotCreateDirectory(path: directory, reason: error.localizedDescription)
            }
        }
        guard FileManager.default.fileExists(atPath: path) else { return }
        if SocketProbe.isListening(path: path) { throw ServerError.socketInUse(path: path) }
        unlink(path)
    }

    // MARK: On the event loop

    func clientConnected(_ channel: Channel) {
        clients[ObjectIdentifier(channel)] = channel
    }

    func clientDisconnected(_ channel: Channel) {
        clients[ObjectIdentifier(channel)] = nil
        watches[ObjectIdentifier(channel)] = nil
    }

    func handle(_ request: Request, from channel: Channel, reply: @escaping (Data) -> Void) {
        do {
            switch request.command {
            case .status:
                reply(Wire.line(status(id: request.id)))
            case .steps:
                reply(Wire.line(steps(engine.snapshot, id: request.id)))
            case .reset:
                let loop = channel.eventLoop
                engine.reset { [self] snapshot in
                    loop.execute { reply(Wire.line(self.steps(snapshot, id: request.id))) }
                }
            case .watch:
                reply(Wire.line(try watch(request, channel: channel)))
            case .position, .track, .visits:
                try handleLocation(request, from: channel, reply: reply)
            }
        } catch {
            reply(Wire.line(ErrorMessage(message: "\(error)", id: request.id)))
        }
    }

    private func status(id: JSONValue?) -> StatusMessage {
        let s = engine.snapshot
        return StatusMessage(release: stepdRelease, uptime_s: Date().timeIntervalSince(startedAt),
                             source: SourceStatus(kind: s.sourceKind, description: s.sourceDescription,
                                                  state: s.sourceState.name, error: s.sourceState.reason),
                             detector: s.detector, rate_in_hz: s.rateInHz, rate_out_hz: s.rateOutHz,
                             samples_in: s.samplesIn, samples_out: s.samplesOut, clients: clients.count,
                             gps: gpsStatus(), id: id)
    }

    private func steps(_ s: EngineSnapshot, id: JSONValue?) -> StepsMessage {
        StepsMessage(steps: s.steps, since: Timestamp.string(s.since), cadence_spm: s.cadenceStepsPerMinute,
                     distance_m: s.distanceMeters, detector: s.detector, id: id)
    }

    private func watch(_ request: Request, channel: Channel) throws -> WatchMessage {
        let key = ObjectIdentifier(channel)
        let enable = try request.bool("enable") ?? true
        var classes: Set<WatchClass> = []
        if let names = try request.strings("classes") {
            for name in names {
                guard let c = WatchClass(rawValue: name.uppercased()) else {
                    let known = WatchClass.allCases.map(\.rawValue).joined(separator: ", ")
                    throw RequestError.badField(name: "classes", expected: "a list of classes among \(known)")
                }
                classes.insert(c)
            }
        } else {
            classes = Set(WatchClass.allCases)
        }
        if enable {
            watches[key, default: []].formUnion(classes)
        } else if request.fields["classes"] == nil {
            watches[key] = nil
        } else {
            watches[key]?.subtract(classes)
        }
        let current = (watches[key] ?? []).map(\.rawValue).sorted()
        return WatchMessage(enable: !current.isEmpty, classes: current, id: request.id)
    }

    private func broadcast(_ event: EngineEvent) {
        let (watchClass, data): (WatchClass, Data)
        switch event {
        case .step(let count, let time):
            (watchClass, data) = (.step, Wire.line(StepMessage(steps: count, time: Timestamp.string(time))))
        case .location(let event):
            (watchClass, data) = wire(event)
        }
        for (key, classes) in watches where classes.contains(watchClass) {
            guard let client = clients[key] else { continue }
            var buffer = client.allocator.buffer(capacity: data.count)
            buffer.writeBytes(data)
            client.writeAndFlush(buffer, promise: nil)
        }
    }
}
