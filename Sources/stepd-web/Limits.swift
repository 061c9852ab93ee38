import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTPTypes
import StepProtocol
import Timekeeping

/// What stepd-web holds for a client, and for how long (docs/web.md, "Limits"): nothing forever.
enum WebLimits {
    /// A request (its head and any body) must have arrived whole this long after the connection opened or the
    /// previous response ended; else the connection is closed. Slowloris, idle keep-alive and a stalled body alike.
    static let requestSeconds: Int64 = 10
    /// A response's bytes may wait this long for a client that does not read them (NIO's outbound buffer past its
    /// high-water mark, the socket's buffers full); then the connection is closed. An event stream to a page that
    /// reads nothing ends so, and a file to a client that stopped reading.
    static let writeStallSeconds: Int64 = 30
    /// Connections open at once. More wait in the listen backlog until one closes (at the latest `requestSeconds`
    /// for one that sends nothing whole). About 14 KB each, so at most ~30 MB; lowered to fit the process's
    /// file limit.
    static let connections = 2048
    /// Descriptors kept for what is not an HTTP connection (the daemon's sockets, the page's files, the log).
    static let reservedDescriptors = 64
    /// The daemon's answer to one request must come within this; else 504 and the connection to it is closed.
    static let daemonReplySeconds: Int64 = 10
    /// Connections to the daemon that requests hold at once (DaemonPool); the event stream's `watch` is one more.
    /// Enough for a page's burst of requests; few enough that stepd-web never takes the slots of the daemon's users.
    static let daemonConnections = 8
    /// Requests that may wait for one of them, in order; the next gets 503 with Retry-After at once.
    static let daemonWaiting = 64
    /// Of those, what requests for a range (`track`, `visits`, `history`) may hold, and how many of them may wait:
    /// the page's `status` and `steps` always have the other 4.
    static let daemonRangeConnections = 4
    static let daemonRangeWaiting = 32
    /// A request that waited this long for a connection gets 503 with Retry-After.
    static let daemonWaitSeconds: Int64 = 10
    /// Retry-After of those 503s.
    static let retryAfterSeconds = 2
    /// Pauses between the tries of a connect that the daemon's full listen queue refused (EAGAIN): 1.6 s in all,
    /// then the request fails (503).
    static let connectRetryMilliseconds = [10, 20, 40, 80, 160, 320, 500, 500]
    /// A reply line that has not ended within this many bytes is streamed to the HTTP client, not held whole.
    static let replyHeadBytes = 64 * 1024
    /// A streamed reply's bytes held between the daemon and the HTTP client, per request; the daemon is read no
    /// faster than the client takes them.
    static let replyBufferBytes = 64 * 1024
    /// The size of each read from the daemon's socket for a reply.
    static let replyReadBytes = 16 * 1024
    /// A streamed reply none of whose bytes the HTTP client takes for this long is given up: its connection to the
    /// daemon and its place in the pool are freed at once, and the HTTP connection is closed, the body cut short.
    static let replyStallSeconds: Int64 = 5
    /// After SIGTERM or SIGINT the process is gone by this, whatever its clients do (ShutdownDeadline).
    static let shutdownSeconds = 1.5
    /// A request's head: its fields' sizes and count (HTTP/1 decoder limits).
    static let headerBytes = 16 * 1024
    static let headerFields = 100

    /// Raises the soft limit on open files to the hard one and returns the connections that fit under it.
    static func connectionsForFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return connections }
        let wanted = rlim_t(connections + reservedDescriptors)
        if limit.rlim_cur < wanted, limit.rlim_max > limit.rlim_cur {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
            _ = getrlimit(RLIMIT_NOFILE_VALUE, &limit)
        }
        return max(16, min(connections, Int(clamping: limit.rlim_cur) - reservedDescriptors))
    }

    #if os(Linux)
    private static let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
    #endif
}

/// Closes a connection whose request does not arrive whole in time: `WebLimits.requestSeconds` from the
/// connection's start, from the end of the previous response (an idle keep-alive connection), or from a head
/// that came while an earlier response was still going (pipelining). A response in progress, however long (the
/// event stream), is not timed: only what the client owes is, and its reading (`WebLimits.writeStallSeconds`
/// without room for the response's bytes closes the connection). Sits after Hummingbird's HTTP/1 decoder, so it sees
/// whole heads: header lines trickled one by one do not count as progress.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let registry: OpenConnections?
    private var deadline: Scheduled<Void>?
    /// Armed while the channel is not writable (the client does not read).
    private var stall: Scheduled<Void>?
    /// A head read whose end has not come.
    private var reading = false
    /// Requests read whose response has not ended.
    private var unanswered = 0

    init(seconds: Int64 = WebLimits.requestSeconds, registry: OpenConnections? = nil) {
        timeout = .seconds(seconds)
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        registry?.add(context.channel)
        if context.channel.isActive { arm(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        registry?.remove(context.channel)
        disarm()
        stall?.cancel()
        stall = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        stall?.cancel()
        stall = nil
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stall?.cancel()
            stall = nil
        } else if stall == nil {
            stall = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: .seconds(WebLimits.writeStallSeconds)) { [self] in
                stall = nil
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            reading = true
            unanswered += 1
            if deadline == nil { arm(context) }
        case .body:
            break
        case .end:
            reading = false
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            if unanswered == 0, !reading { arm(context) }
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        deadline = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: timeout) { [self] in
            deadline = nil
            context.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}

/// The query's values, checked before anything reaches the daemon: a bad one gets 400 with what is wrong.
struct QueryError: Error, CustomStringConvertible {
    var description: String
}

enum Query {
    /// "2026-11-16T00:00:00.000000000+01:00" is 35 characters.
    static let timeCharacters = 40

    /// `from` or `to`: an ISO-8601 time as the daemon takes them (docs/protocol.md, `history`), or absent.
    static func time(_ name: String, _ value: String?) throws -> String? {
        guard let value else { return nil }
        guard value.utf8.count <= timeCharacters, Timestamp.date(value) != nil else {
            let shown = value.count > 40 ? "\(value.prefix(24))... (\(value.utf8.count) bytes)" : value
            throw QueryError(description: "\"\(name)\" must be an ISO-8601 time such as 2026-11-16T00:00:00+01:00 "
                             + "or 2026-11-16T08:30:00.000Z, not \"\(shown)\"")
        }
        return value
    }

    static let bins = ["minute", "hour", "day"]

    static func bin(_ value: String?) throws -> String {
        guard let value else { return "hour" }
        guard bins.contains(value) else {
            let shown = value.count > 40 ? "\(value.prefix(24))... (\(value.utf8.count) bytes)" : value
            throw QueryError(description: "\"bin\" must be minute, hour or day, not \"\(shown)\"")
        }
        return value
    }
}

/// The HTTP connections open now, so that a shutdown can close those its graceful part leaves open.
final class OpenConnections: Sendable {
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { channels.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) } }

    /// Closes every one; returns how many there were.
    func closeAll() -> Int {
        let open = channels.withLock { Array($0.values) }
        for channel in open { channel.close(promise: nil) }
        return open.count
    }
}

/// SIGTERM and SIGINT, beside the service group's own sources (libdispatch delivers a signal to every source of
/// it), which start the server's graceful shutdown: it stops accepting, closes idle connections and ends the event
/// streams. What a client still holds `closeSeconds` later (a stream or a file it does not read, a body that never
/// comes) is closed; should the process still be there at `WebLimits.shutdownSeconds`, it exits.
/// Held by the task that runs the server (StepdWeb.run), never shared: not Sendable.
final class ShutdownDeadline {
    static let closeSeconds = 0.5
    private let sources: [DispatchSourceSignal]

    init(connections: OpenConnections, logger: Logger) {
        let queue = DispatchQueue(label: "stepd-web.shutdown")
        sources = [SIGTERM, SIGINT].map { signal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { [queue] in
                SystemClock().run(after: Self.closeSeconds, on: queue) {
                    let closed = connections.closeAll()
                    if closed > 0 { logger.notice("closed \(closed) connections still open \(Self.closeSeconds) s after the signal") }
                }
                SystemClock().run(after: WebLimits.shutdownSeconds, on: queue) {
                    logger.notice("still running \(WebLimits.shutdownSeconds) s after the signal; exiting")
                    fflush(nil)
                    _exit(0)
                }
            }
            source.resume()
            return source
        }
    }
}
