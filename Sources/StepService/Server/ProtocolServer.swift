import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import StepProtocol
#if canImport(Glibc)
import Glibc
#endif

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

/// Why a connection is refused at once, with an ERROR that says so.
enum ConnectionRefusal: Error, CustomStringConvertible {
    case full(limit: Int)
    case reserved(open: Int)
    case perUser(uid: uid_t, limit: Int)

    var description: String {
        switch self {
        case .full(let limit): return "too many clients (limit \(limit)); try again later"
        case .reserved(let open):
            return "too many clients: the \(open) slots open to every user are taken (the rest are kept for root and the admin group); try again later"
        case .perUser(let uid, let limit):
            return "too many connections from uid \(uid) (limit \(limit) per user); close some and try again"
        }
    }
}

/// The Unix-socket server: newline-delimited JSON on one event loop. All per-client state (sessions, watches)
/// belongs to that loop; the engine's events hop onto it.
public final class ProtocolServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        public var socketMode: mode_t = 0o660
        /// The group that owns the socket (`stepd`), when it exists.
        public var socketGroup: String? = "stepd"
        public var maximumLineLength = 4096
        public var maximumClients = 256
        /// Connections one uid may hold at once (root, the daemon's user and the admin group are not counted),
        /// so that one user cannot take every slot.
        public var maximumClientsPerUser = 32
        /// Slots of `maximumClients` that only root, the daemon's user and the admin group may take.
        public var reservedClients = 8
        /// Requests one connection may have waiting for an answer; a client past it is closed.
        public var maximumRequestsInFlight = 16
        /// A watcher that has let this much output pile up unread in the daemon is dropped (gpsd does the same);
        /// for any client, no reply is started while this much is unread.
        public var maximumUnsentBytes = 64 * 1024
        /// Members of this group may `reset`, besides root and the daemon's own user.
        public var adminGroup: String?
        public init(socketPath: String) { self.socketPath = socketPath }
    }

    public let configuration: Configuration
    let engine: Engine
    let logger: Logger
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: EventLoop
    private var channel: Channel?
    let startedAt = Date()
    let access: AccessPolicy
    private let anyoneWatching = NIOLockedValueBox(false)
    /// True when systemd handed us the socket: then the socket file is systemd's, not ours to remove.
    private var adoptedSocket = false
    /// The history database, when the daemon keeps one; set before `start`.
    public var store: StepStore?
    /// The MQTT publisher, when `--mqtt-url` is given; set before `start`.
    public var fleet: FleetPublisher?

    /// What clients can trigger (refusals, closings, resets refused) is logged through this: one line per
    /// cause per 10 s, with a count.
    let clientLog: RateLimitedLog

    // Owned by the event loop.
    var sessions: [ObjectIdentifier: ClientSession] = [:]
    /// Connections per uid, for the per-user limit.
    private var connectionsByUID: [uid_t: Int] = [:]
    var droppedWatchers = 0
    /// Clients closed because they had too many requests waiting (ClientHandler).
    var closedClients = 0
    /// The newest wall time a MOTION was encoded for, so that all watchers due share one encoding.
    private var motionCache: (sampleTime: Double, data: Data)?

    public init(configuration: Configuration, engine: Engine, logger: Logger = Logger(label: "stepd.server")) {
        self.configuration = configuration
        self.engine = engine
        self.logger = logger
        clientLog = RateLimitedLog(logger: logger)
        loop = group.next()
        access = AccessPolicy(adminGroup: configuration.adminGroup.flatMap(AccessPolicy.groupID(named:)))
        if let name = configuration.adminGroup, access.adminGroup == nil {
            logger.warning("admin group '\(name)' does not exist; only root and the daemon's user may reset")
        }
        let loop = self.loop
        let anyoneWatching = self.anyoneWatching
        engine.onEvent { [weak self] event in
            // With nobody watching, the event loop is not woken at all: a quiet daemon stays quiet.
            guard anyoneWatching.withLockedValue({ $0 }) else { return }
            loop.execute { self?.broadcast(event) }
        }
    }

    /// Binds the socket (replacing a stale one left by a crash, never a live one) and starts accepting.
    public func start() throws {
        let path = configuration.socketPath
        try prepare(path: path)
        do {
            channel = try bootstrap().bind(unixDomainSocketPath: path).wait()
        } catch {
            throw ServerError.cannotBind(path: path, reason: "\(error)")
        }
        chmod(path, configuration.socketMode)
        if let name = configuration.socketGroup, let gid = AccessPolicy.groupID(named: name) {
            chown(path, uid_t.max, gid)  // -1 keeps the owner
        }
        logger.info("listening on \(path)")
    }

    /// Serves on a socket that is already bound and listening: systemd's socket activation (LISTEN_FDS).
    public func start(adoptingListeningSocket descriptor: CInt) throws {
        adoptedSocket = true
        do {
            channel = try bootstrap().withBoundSocket(descriptor).wait()
        } catch {
            throw ServerError.cannotBind(path: configuration.socketPath, reason: "adopting descriptor \(descriptor): \(error)")
        }
        logger.info("serving the socket systemd passed (\(configuration.socketPath))")
    }

    func bootstrap() -> ServerBootstrap {
        let limits = ClientLimits(maximumLineLength: configuration.maximumLineLength,
                                  maximumRequestsInFlight: configuration.maximumRequestsInFlight,
                                  maximumUnsentBytes: configuration.maximumUnsentBytes)
        return ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            // A modest kernel buffer, so that what a client leaves unread shows in the daemon's own count soon.
            .childChannelOption(ChannelOptions.socketOption(.so_sndbuf), value: 32 * 1024)
            // A client that sends its requests and shuts its side (`echo ... | socat`) still gets the replies
            // that come later from another queue (reset, history); ClientHandler closes once they are out.
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.writeBufferWaterMark,
                                value: .init(low: configuration.maximumUnsentBytes / 2, high: configuration.maximumUnsentBytes))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineFrameDecoder(maximumLength: limits.maximumLineLength)))
                    try channel.pipeline.syncOperations.addHandler(ClientHandler(server: self, limits: limits))
                }
            }
    }

    public func stop() {
        try? channel?.close().wait()
        try? loop.submit { [self] in
            for session in sessions.values { session.channel.close(promise: nil) }
        }.wait()
        if !adoptedSocket { unlink(configuration.socketPath) }
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

    // MARK: Sessions (on the event loop)

    /// Registers a new client, or says why it is refused: the server is full, the slots left are kept for
    /// root and the admin group, or the client's user already holds its share.
    func clientConnected(_ channel: Channel, credentials: PeerCredentials?) -> Result<ClientSession, ConnectionRefusal> {
        let privileged = access.mayAdminister(credentials)
        let maximum = configuration.maximumClients
        // A small --max-clients shrinks the others: one slot at least stays open to everyone.
        let open = maximum - min(configuration.reservedClients, maximum - 1)
        let perUser = min(configuration.maximumClientsPerUser, open)
        var refusal: ConnectionRefusal?
        if sessions.count >= maximum {
            refusal = .full(limit: maximum)
        } else if !privileged, sessions.count >= open {
            refusal = .reserved(open: open)
        } else if !privileged, let uid = credentials?.uid, connectionsByUID[uid, default: 0] >= perUser {
            refusal = .perUser(uid: uid, limit: perUser)
        }
        if let refusal {
            let who = credentials?.description ?? "an unidentified client"
            clientLog.log(.warning, cause: "refused uid \(credentials.map { "\($0.uid)" } ?? "?")",
                          "refused a connection from \(who): \(refusal)")
            return .failure(refusal)
        }
        let session = ClientSession(channel: channel, credentials: credentials, privileged: privileged)
        sessions[ObjectIdentifier(channel)] = session
        if let uid = credentials?.uid, !privileged { connectionsByUID[uid, default: 0] += 1 }
        if logger.logLevel <= .debug {
            clientLog.log(.debug, cause: "connect \(session.who)",
                          "client connected: \(session.who)\(privileged ? " (admin)" : ""); \(sessions.count) connected")
        }
        return .success(session)
    }

    func clientDisconnected(_ session: ClientSession) {
        guard sessions.removeValue(forKey: ObjectIdentifier(session.channel)) != nil else { return }
        if let uid = session.credentials?.uid, !session.privileged {
            connectionsByUID[uid, default: 1] -= 1
            if connectionsByUID[uid] == 0 { connectionsByUID[uid] = nil }
        }
        if logger.logLevel <= .debug {
            clientLog.log(.debug, cause: "disconnect \(session.who)",
                          "client disconnected: \(session.who) after \(session.requestsServed) requests; \(sessions.count) connected")
        }
        updateMotionDemand()
        if sessions.isEmpty { Self.returnFreedMemory() }
    }

    /// A client is being closed for what it made the daemon hold (ClientHandler).
    func clientOverLimit(_ session: ClientSession, reason: ClientLimitError) {
        closedClients += 1
        clientLog.log(.warning, cause: "over limit uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                      "closed a client (\(session.who)): \(reason)")
    }

    /// After a burst of clients, glibc keeps the freed buffers of their channels in its arenas; with the
    /// last client gone, give those pages back so that the daemon's memory is what it was before the burst.
    private static func returnFreedMemory() {
        mallocTrim?(0)
    }

    /// glibc's `malloc_trim`, looked up at run time: Swift's Glibc module does not import <malloc.h>, and
    /// other C libraries (musl) do not have it.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Tells the engine and the event hop what is being watched now; call after any change of watches.
    func updateMotionDemand() {
        engine.setMotionWanted(sessions.values.contains { $0.watched.contains(.motion) })
        let watching = sessions.values.contains { !$0.watched.isEmpty }
        anyoneWatching.withLockedValue { $0 = watching }
    }

    // MARK: Events (on the event loop)

    private func broadcast(_ event: EngineEvent) {
        switch event {
        case .step(let count, let time, _):
            send(Wire.line(StepMessage(steps: count, time: Timestamp.string(time))), to: .step)
        case .activity(let state, let time):
            send(Wire.line(ActivityMessage(state: state.rawValue, time: Timestamp.string(time))), to: .activity)
        case .location(let event):
            let (watchClass, data) = wire(event)
            send(data, to: watchClass)
        case .pedometer(let snapshot):
            send(Wire.line(Replies.steps(snapshot, id: nil, asClass: "PEDOMETER")), to: .pedometer)
        case .floors:
            break   // PEDOMETER, which follows, carries the totals
        case .motion(let estimate, let time, let sampleTime):
            for session in sessions.values where session.watched.contains(.motion) {
                // Thin the 60 Hz stream to the rate asked for; the small slack keeps 60 Hz exact despite rounding.
                guard sampleTime - session.lastMotionSampleTime >= 1 / session.motionRateHz - 1e-3 else { continue }
                session.lastMotionSampleTime = sampleTime
                if motionCache?.sampleTime != sampleTime {
                    motionCache = (sampleTime, Wire.line(Replies.motion(estimate, time: time)))
                }
                deliver(motionCache!.data, to: session)
            }
        }
    }

    private func send(_ data: Data, to watchClass: WatchClass) {
        for session in sessions.values where session.watched.contains(watchClass) {
            deliver(data, to: session)
        }
    }

    /// Writes an event to a watcher, or drops the watcher if it has left too much unread.
    private func deliver(_ data: Data, to session: ClientSession) {
        let channel = session.channel
        guard channel.isActive else { return }
        let unsent = (try? channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        guard unsent <= configuration.maximumUnsentBytes else {
            droppedWatchers += 1
            clientLog.log(.warning, cause: "dropped watcher uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                          "dropped a watcher (\(session.who)): \(unsent) bytes unread, more than \(configuration.maximumUnsentBytes)")
            session.watched = []
            clientDisconnected(session)
            channel.close(promise: nil)
            return
        }
        var buffer = channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        channel.writeAndFlush(buffer, promise: nil)
    }
}
