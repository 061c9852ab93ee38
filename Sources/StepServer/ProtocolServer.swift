import Foundation
import Locking
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import StepProtocol
#if canImport(Glibc)
import Glibc
import StepEngine
import StepStore
import StepFleet
import StepLogging
#endif

/// Why the server could not start listening.
public enum ServerError: Error, CustomStringConvertible {
    case cannotCreateDirectory(path: String, reason: String)
    case socketInUse(path: String)
    case notASocket(path: String, kind: String)
    case cannotBind(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let reason): return "cannot create socket directory \(path): \(reason)"
        case .socketInUse(let path): return "another daemon is already listening on \(path)"
        case .notASocket(let path, let kind):
            return "\(path) exists and is \(kind), not a socket left by a stopped daemon: not replacing it; "
                + "give --socket a path of its own"
        case .cannotBind(let path, let reason): return "cannot listen on \(path): \(reason)"
        }
    }
}

/// The Unix-socket server: newline-delimited JSON on one event loop. All per-client state (sessions, watches)
/// belongs to that loop; the engine's events hop onto it. What each request does: Requests/.
/// Sendable by construction: that state is in a NIOLoopBoundBox (reached only on `loop`, which it checks), and
/// what the starting thread sets (`store`, `fleet`, the channel) is behind a `Locked` lock.
public final class ProtocolServer: Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        public var socketMode: mode_t = 0o660
        /// The group that owns the socket (`stepd`), when it exists.
        public var socketGroup: String? = "stepd"
        public var maximumLineLength = 4096
        public var maximumClients = 256
        /// Connections one uid may hold at once (root is not counted; the admin group and the daemon's user are),
        /// so that one user cannot take every slot.
        public var maximumClientsPerUser = 32
        /// Slots of `maximumClients` that only root (uid 0) may take.
        public var reservedClients = 8
        /// Requests one connection may have waiting for an answer; a client past it is closed.
        public var maximumRequestsInFlight = 16
        /// A watcher that has let this much output pile up unread in the daemon is dropped (gpsd does the same);
        /// for any client, no reply is started while this much is unread.
        public var maximumUnsentBytes = 64 * 1024
        /// The reply bytes held for all clients together (ReplyBudget): past it, long replies wait.
        public var maximumBufferedReplyBytes = 16 * 1024 * 1024
        /// Members of this group may `reset`, besides root and the daemon's own user.
        public var adminGroup: String?
        public init(socketPath: String) { self.socketPath = socketPath }
    }

    public let configuration: Configuration
    let engine: Engine
    let logger: Logger
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: EventLoop
    /// On the engine's monotonic clock: STATUS's `uptime_s`.
    let startedAt: Double
    let access: AccessPolicy
    let anyoneWatching = NIOLockedValueBox(false)
    let replyBudget: ReplyBudget
    /// What the thread that starts and stops the server sets.
    private struct Setup {
        var channel: Channel?
        /// The device and inode of the socket this daemon put at its path: at stop it removes the path only
        /// while it is still that socket, not one a second daemon bound there after ours was unlinked. Nil when
        /// systemd handed us the socket: then the socket file is systemd's, not ours to remove.
        var boundSocket: SocketIdentity?
        var store: StepStore?
        var fleet: FleetPublisher?
    }
    private let setup = Locked(Setup())
    /// The history database, when the daemon keeps one; set before `start`.
    public var store: StepStore? {
        get { setup.withLock { $0.store } }
        set { setup.withLock { $0.store = newValue } }
    }
    /// The MQTT publisher, when `--mqtt-url` is given; set before `start`.
    public var fleet: FleetPublisher? {
        get { setup.withLock { $0.fleet } }
        set { setup.withLock { $0.fleet = newValue } }
    }

    /// What clients can trigger (refusals, closings, resets refused) is logged through this: one line per
    /// cause per 10 s, with a count.
    let clientLog: RateLimitedLog

    /// Owned by the event loop.
    struct LoopState {
        var sessions: [ObjectIdentifier: ClientSession] = [:]
        /// Connections per uid, for the per-user limit.
        var connectionsByUID: [uid_t: Int] = [:]
        var droppedWatchers = 0
        /// Clients closed because they had too many requests waiting (ClientHandler).
        var closedClients = 0
        /// The heap's trim, due a second after the last client left (returnFreedMemorySoon).
        var memoryTrim: Scheduled<Void>?
        /// The newest wall time a MOTION was encoded for, so that all watchers due share one encoding.
        var motionCache: (sampleTime: Double, data: Data)?
    }
    /// Empty until the loop first touches it (made off the loop, the box may only start empty).
    private let onLoop: NIOLoopBoundBox<LoopState?>

    /// The loop's state; on the loop only (the box checks).
    var loopState: LoopState {
        get { onLoop.value ?? LoopState() }
        set { onLoop.value = newValue }
        _modify {
            if onLoop.value == nil { onLoop.value = LoopState() }
            yield &onLoop.value!
        }
    }
    var sessions: [ObjectIdentifier: ClientSession] {
        get { loopState.sessions }
        set { loopState.sessions = newValue }
        _modify { yield &loopState.sessions }
    }
    var connectionsByUID: [uid_t: Int] {
        get { loopState.connectionsByUID }
        set { loopState.connectionsByUID = newValue }
        _modify { yield &loopState.connectionsByUID }
    }
    var droppedWatchers: Int {
        get { loopState.droppedWatchers }
        set { loopState.droppedWatchers = newValue }
    }
    var closedClients: Int {
        get { loopState.closedClients }
        set { loopState.closedClients = newValue }
    }
    var memoryTrim: Scheduled<Void>? {
        get { loopState.memoryTrim }
        set { loopState.memoryTrim = newValue }
    }
    var motionCache: (sampleTime: Double, data: Data)? {
        get { loopState.motionCache }
        set { loopState.motionCache = newValue }
    }

    public init(configuration: Configuration, engine: Engine, logger: Logger = Logger(label: "stepd.server")) {
        self.configuration = configuration
        self.engine = engine
        startedAt = engine.clock.monotonicSeconds
        self.logger = logger
        clientLog = RateLimitedLog(logger: logger)
        loop = group.next()
        onLoop = .makeEmptyBox(eventLoop: loop)
        replyBudget = ReplyBudget(limitBytes: configuration.maximumBufferedReplyBytes, loop: loop)
        access = AccessPolicy(adminGroup: configuration.adminGroup.flatMap(AccessPolicy.groupID(named:)))
        if let name = configuration.adminGroup, access.adminGroup == nil {
            logger.warning("admin group '\(name)' does not exist; only root and the daemon's user may reset")
        }
    }

    /// Binds the socket (replacing a stale one left by a crash, never a live one) and starts accepting.
    ///
    /// The socket is bound under a name of its own beside the path, given its mode and group there, and then
    /// linked to the path: a client never finds it with the umask's mode (which refuses the group's members)
    /// and a mode set by hand after the start is never undone by the daemon's own.
    public func start() throws {
        let path = configuration.socketPath
        try prepare(path: path)
        let staging = Self.stagingPath(for: path)
        if let staging { unlink(staging) }
        let bound = staging ?? path
        do {
            let channel = try bootstrap().bind(unixDomainSocketPath: bound).wait()
            setup.withLock { $0.channel = channel }
        } catch {
            throw ServerError.cannotBind(path: path, reason: "\(error)")
        }
        // The daemon serves even so (root and its own user can still connect), but the log says who cannot.
        for problem in Self.setPermissions(path: bound, mode: configuration.socketMode, group: configuration.socketGroup) {
            logger.warning("\(problem)")
        }
        if let staging {
            // link(2), not rename(2): a daemon that started at the same moment and took the path keeps it.
            let linked = link(staging, path) == 0 ? 0 : errno
            unlink(staging)
            if linked == EEXIST { throw ServerError.socketInUse(path: path) }
            if linked != 0 {
                throw ServerError.cannotBind(path: path, reason: "cannot link the socket from \(staging): \(String(cString: strerror(linked)))")
            }
        }
        setup.withLock { $0.boundSocket = SocketIdentity(path: path) }
        logger.info("listening on \(path)")
    }

    /// The name the socket is bound under before it is linked to `path`: the path with `.PID` added, or nil
    /// when that would not fit a socket address (108 bytes), and the socket is then bound at `path` itself.
    static func stagingPath(for path: String) -> String? {
        let staging = "\(path).\(getpid())"
        return staging.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) ? staging : nil
    }

    /// Serves on a socket that is already bound and listening: systemd's socket activation (LISTEN_FDS).
    public func start(adoptingListeningSocket descriptor: CInt) throws {
        do {
            let channel = try bootstrap().withBoundSocket(descriptor).wait()
            setup.withLock { $0.channel = channel }
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
                    try channel.pipeline.syncOperations.addHandler(ClientHandler(responder: self, limits: limits,
                                                                                  budget: replyBudget))
                }
            }
    }

    /// Stops accepting and closes every client. With `keepingEventLoop`, the loop still runs afterwards, so that
    /// replies the store's readers and the engine are finishing can still hop onto it (they are dropped there,
    /// their clients gone); `shutDownEventLoop` ends it once those are stopped. Without, it ends here too.
    public func stop(keepingEventLoop: Bool = false) {
        let (channel, boundSocket) = setup.withLock { ($0.channel, $0.boundSocket) }
        try? channel?.close().wait()
        try? loop.submit { [self] in memoryTrim?.cancel() }.wait()
        try? loop.submit { [self] in
            for session in sessions.values { session.channel.close(promise: nil) }
        }.wait()
        // systemd's socket (adopted) is systemd's to remove; ours only while the path still names it.
        if let boundSocket, SocketIdentity(path: configuration.socketPath) == boundSocket {
            unlink(configuration.socketPath)
        }
        if !keepingEventLoop { shutDownEventLoop() }
    }

    /// Ends the event loop: after the store has closed (its readers done) and the engine has drained, the last
    /// ones that hop onto it, so that none schedules work on a loop that is gone (which SWIFTNIO_STRICT makes
    /// a crash). Track pieces being made finish first: their maker hops onto the loop too.
    public func shutDownEventLoop() {
        TrackReply.waitForPiecesInFlight()
        try? group.syncShutdownGracefully()
    }

    private func prepare(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            } catch {
                throw ServerError.cannotCreateDirectory(path: directory, reason: StepStore.clause(error.localizedDescription))
            }
        }
        // Only a socket nobody listens on (left by a crash) is replaced; anything else at the path is someone's.
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw ServerError.notASocket(path: path, kind: Self.kind(of: info.st_mode))
        }
        if SocketProbe.isListening(path: path) { throw ServerError.socketInUse(path: path) }
        unlink(path)
    }

    /// Gives the socket its mode and group (`-1` keeps the owner); returns what failed, with errno's words: a
    /// socket left 0755 or root's group refuses the clients the mode and group were meant to admit.
    static func setPermissions(path: String, mode: mode_t, group name: String?) -> [String] {
        var problems: [String] = []
        if chmod(path, mode) != 0 {
            problems.append("cannot set the mode of \(path) to \(String(mode, radix: 8)): \(String(cString: strerror(errno)));"
                            + " clients other than root and the daemon's user may be refused")
        }
        if let name, let gid = AccessPolicy.groupID(named: name), chown(path, uid_t.max, gid) != 0 {
            problems.append("cannot give \(path) to group \(name): \(String(cString: strerror(errno)));"
                            + " its members may be refused")
        }
        return problems
    }

    private static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        default: return "not a socket"
        }
    }

    /// The clients connected now; asks the event loop, so never call it from there.
    public var clientCount: Int {
        (try? loop.submit { [self] in sessions.count }.wait()) ?? 0
    }

    /// Runs `body` on the event loop every `interval` seconds until the task is cancelled: the watchdog's tick,
    /// whose coming is the proof that the loop still turns. NIO's scheduled task wakes only the loop.
    public func repeatOnLoop(every interval: TimeInterval, _ body: @escaping @Sendable () -> Void) -> RepeatedTask {
        let delay = TimeAmount.milliseconds(Int64((interval * 1000).rounded()))
        return loop.scheduleRepeatedTask(initialDelay: delay, delay: delay) { _ in body() }
    }
}

/// Which file a path names (device and inode, as lstat(2) says), to tell our socket from another at the same path.
struct SocketIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
