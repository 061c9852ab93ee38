import Foundation
import Locking
import NIOCore
import NIOExtras
import NIOFoundationCompat
import NIOPosix
import StepLogging
import StepProtocol
import Timekeeping

/// Why stepd-web could not get an answer from the daemon; the text goes to the page and the log.
enum DaemonError: Error, CustomStringConvertible {
    case unreachable(path: String, reason: String)
    /// The daemon closed the connection; `message` is the ERROR it sent first, if any (too many clients).
    case closed(path: String, message: String?)
    /// The daemon answered with an ERROR (a bad history range, a reset it does not permit): its code (nil when
    /// this stepd-web does not know it) and its words.
    case refused(code: ErrorCode?, message: String)
    /// No answer within `seconds`; the connection was closed.
    case timedOut(path: String, seconds: Int64)
    /// Every connection stepd-web may hold to the daemon is in use, and the request could not wait for one
    /// (DaemonPool): 503 with Retry-After.
    case busy(reason: String)

    var description: String {
        switch self {
        case .unreachable(let path, let reason): return "cannot connect to stepd at \(path): \(reason)"
        case .closed(let path, let message?): return "stepd at \(path) closed the connection: \(message)"
        case .closed(let path, nil): return "stepd at \(path) closed the connection"
        case .refused(_, let message): return message
        case .timedOut(let path, let seconds): return "stepd at \(path) did not answer within \(seconds) s"
        case .busy(let reason): return "\(reason); try again in \(WebLimits.retryAfterSeconds) s"
        }
    }
}

/// Connections to the daemon's Unix socket, speaking docs/protocol.md: JSON lines, VERSION first.
struct DaemonLink: Sendable {
    typealias Lines = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// The socket given with --socket, or nil to look where stepctl looks (SocketPath.forClient) at every
    /// connect, so that a daemon started after stepd-web, or moved, is found.
    let fixedPath: String?
    /// The connections requests may hold at once; the event stream's `watch` is outside it.
    let pool: DaemonPool
    /// The part of them that requests for a range (`track`, `visits`, `history`: long to make, long to send) may
    /// hold, so that the page's `status` and `steps` always find one free whatever the exports do.
    let rangePool: DaemonPool
    /// Where a connect that the daemon's full listen queue refused (EAGAIN) is told, rate-limited.
    let connectLog: RateLimitedLog?
    /// The pauses between connects.
    let clock: any DaemonClock

    init(fixedPath: String?, pool: DaemonPool = DaemonPool(),
         rangePool: DaemonPool = DaemonPool(connections: WebLimits.daemonRangeConnections, waiting: WebLimits.daemonRangeWaiting,
                                           what: "connections to stepd for a range (track, visits, history)"),
         connectLog: RateLimitedLog? = nil, clock: any DaemonClock = SystemClock()) {
        self.fixedPath = fixedPath
        self.clock = clock
        self.pool = pool
        self.rangePool = rangePool
        self.connectLog = connectLog
    }

    var socketPath: String { fixedPath ?? SocketPath.forClient() }

    /// Connects to the daemon's socket. A connect refused with EAGAIN (the daemon's listen queue is full: a flood
    /// of local connections, or a daemon busy for a moment) is tried again after a short, growing pause, at most
    /// `WebLimits.connectRetryMilliseconds` in all, before the request fails (issue 39, point 10). With `readBytes`,
    /// the channel yields raw reads of at most that size, unframed (a reply streamed through); else whole lines.
    func connect(_ path: String, readBytes: Int? = nil,
                 configuration: Lines.Configuration = .init()) async throws -> Lines {
        var pauses = WebLimits.connectRetryMilliseconds[...]
        while true {
            do {
                var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                if let readBytes {
                    bootstrap = bootstrap.channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readBytes))
                }
                return try await bootstrap.connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if readBytes == nil {
                            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                        }
                        return try Lines(wrappingChannelSynchronously: channel, configuration: configuration)
                    }
                }
            } catch let error as IOError where error.errnoCode == EAGAIN && !pauses.isEmpty {
                let pause = pauses.removeFirst()
                connectLog?.log(.notice, cause: "connect EAGAIN",
                                   "cannot connect to stepd at \(path) now: its queue of new connections is full; "
                                   + "trying again for up to \(WebLimits.connectRetryMilliseconds.reduce(0, +)) ms")
                try await clock.sleep(seconds: Double(pause) / 1000)
            } catch let error as IOError {
                throw DaemonError.unreachable(path: path, reason: String(cString: strerror(error.errnoCode)))
            } catch {
                throw DaemonError.unreachable(path: path, reason: "\(error)")
            }
        }
    }

    /// Connects, reads the greeting (VERSION, or the ERROR of a daemon that is full), and runs `body` with the
    /// rest of the lines; the connection is closed when `body` returns or throws, or, with `timeoutSeconds`,
    /// that long after the connection was made unless `body` called `settled` first (then `DaemonError.timedOut`
    /// is thrown).
    func withConnection<Result: Sendable>(
        timeoutSeconds: Int64? = nil,
        _ body: (_ lines: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
                 _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, _ path: String,
                 _ settled: @Sendable () -> Void) async throws -> Result
    ) async throws -> Result {
        let path = socketPath
        let channel = try await connect(path)
        // The deadline closes the connection on its event loop: a read waiting for a line then ends at once.
        let expired = Expiry()
        let deadline = timeoutSeconds.map { seconds in
            channel.channel.eventLoop.scheduleTask(in: .seconds(seconds)) { [channel = channel.channel] in
                expired.fire()
                channel.close(promise: nil)
            }
        }
        defer { deadline?.cancel() }
        let settled: @Sendable () -> Void = { deadline?.cancel() }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                var lines = inbound.makeAsyncIterator()
                guard let greeting = try await lines.next() else { throw DaemonError.closed(path: path, message: nil) }
                if let error = try? JSONDecoder().decode(ErrorMessage.self, from: greeting), error.class == "ERROR" {
                    throw DaemonError.closed(path: path, message: error.message)
                }
                return try await body(&lines, outbound, path, settled)
            }
        } catch {
            if let timeoutSeconds, expired.fired { throw DaemonError.timedOut(path: path, seconds: timeoutSeconds) }
            throw error
        }
    }

    /// Sends one request and returns its reply line as the daemon wrote it; an ERROR reply is thrown. Holds one of
    /// the pool's connections meanwhile; for a reply that may be long, `reply` streams it instead.
    func request(_ fields: [String: JSONValue]) async throws -> ByteBuffer {
        try await pool.acquire()
        defer { pool.release() }
        var request = fields
        request["id"] = .integer(1)
        let line = try Self.line(request)
        return try await withConnection(timeoutSeconds: WebLimits.daemonReplySeconds) { lines, outbound, path, _ in
            try await outbound.write(line)
            // This connection watches nothing, so no event comes; still, match on the id as a client must. An ERROR
            // without an id (a line the daemon discarded unread, too long for it) can only be about the one request
            // in flight: it answers it too.
            while let reply = try await lines.next() {
                guard let head = MessageHead(line: Data(buffer: reply)) else { continue }
                let isError = head.class == ErrorMessage.messageClass
                guard head.id == .integer(1) || (isError && head.id == nil) else { continue }
                if isError {
                    let error = try JSONDecoder().decode(ErrorMessage.self, from: reply)
                    throw DaemonError.refused(code: error.errorCode, message: error.message)
                }
                return reply
            }
            throw DaemonError.closed(path: path, message: nil)
        }
    }

    /// A request as one protocol line.
    static func line(_ fields: [String: JSONValue]) throws -> ByteBuffer {
        var data = try jsonEncoder.encode(JSONValue.object(fields))
        data.append(0x0A)
        return ByteBuffer(bytes: data)
    }
}

/// Whether a connection's deadline fired, set on its event loop and read after the connection closed.
private final class Expiry: Sendable {
    private let value = Locked(false)
    var fired: Bool { value.withLock { $0 } }
    func fire() { value.withLock { $0 = true } }
}

/// JSON as the daemon writes it: slashes left alone ("/run/stepd/stepd.sock", not "\\/run\\/...").
let jsonEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return encoder
}()
