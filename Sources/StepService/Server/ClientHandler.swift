import Foundation
import NIOCore
import StepProtocol

/// One connected client: greets it with VERSION, answers its requests in order, and registers its watches.
///
/// What a client can make the daemon hold is bounded (issue 14): a request is answered as soon as it is read,
/// but only while less than `maximumUnsentBytes` of earlier output is unread; reading stops while any request
/// waits; and a client with more than `maximumRequestsInFlight` requests waiting behind output it does not read
/// is closed with an ERROR and a logged reason. A closed client's waiting requests are dropped, never computed.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias OutboundOut = ByteBuffer

    private let server: ProtocolServer
    private let limits: ClientLimits
    private var session: ClientSession?
    /// Request lines read and not yet answered, and whether one is being answered on another queue.
    private var waiting = CircularBuffer<LineFrame>()
    private var inFlight = false
    private var serving = false
    private var inputClosed = false
    /// Set once the connection is being closed: nothing more is read, served or written.
    private var closing = false

    init(server: ProtocolServer, limits: ClientLimits) {
        self.server = server
        self.limits = limits
    }

    func channelActive(context: ChannelHandlerContext) {
        switch server.clientConnected(context.channel, credentials: PeerCredentials.of(context.channel)) {
        case .success(let session):
            self.session = session
            write(Wire.line(VersionMessage(release: stepdRelease)), context: context)
        case .failure(let refusal):
            write(Wire.line(ErrorMessage(message: refusal.description)), context: context)
            close(context: context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        waiting.removeAll()  // a closed client's queued work is dropped, never computed
        if let session { server.clientDisconnected(session) }
        session = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !closing else { return }
        waiting.append(unwrapInboundIn(data))
        serveWaiting(context: context)
        // Requests pile up only behind unread output or a slow request. Behind a slow one (history, track)
        // they wait, a read's worth at most; behind output the client does not read, it is not coming back.
        if waiting.count > limits.maximumRequestsInFlight, !context.channel.isWritable {
            let reason = ClientLimitError.tooManyInFlight(limit: limits.maximumRequestsInFlight,
                                                          unsentBytes: limits.maximumUnsentBytes)
            server.clientOverLimit(session, reason: reason)
            write(Wire.line(ErrorMessage(message: reason.description)), context: context)
            close(context: context)
        }
    }

    /// Answers the lines read so far, in order, while the client keeps up with reading. A request answered
    /// on another queue (reset, history, track) holds the ones after it; so does output left unread.
    private func serveWaiting(context: ChannelHandlerContext) {
        guard !serving else { return }
        serving = true
        while !closing, !inFlight, mayWrite(context: context), let frame = waiting.popFirst() {
            serve(frame, context: context)
        }
        serving = false
        updateReading(context: context)
        closeIfDone(context: context)
    }

    /// Whether the client has read enough of what it was sent for another reply to be started: the channel's
    /// high water mark is `maximumUnsentBytes` (ProtocolServer.bootstrap), and it turns writable again, which
    /// restarts serving, once half of that is read.
    private func mayWrite(context: ChannelHandlerContext) -> Bool {
        context.channel.isWritable
    }

    private func serve(_ frame: LineFrame, context: ChannelHandlerContext) {
        guard let session else { return }
        switch frame {
        case .tooLong:
            write(Wire.line(ErrorMessage(message: RequestError.tooLong(limit: limits.maximumLineLength).description)), context: context)
        case .line(let buffer):
            let bytes = Data(buffer.readableBytesView)
            if bytes.allSatisfy({ $0 == 32 || $0 == 9 }) { return }  // blank lines are keep-alives
            let request: Request
            do {
                request = try Request.parse(bytes)
            } catch {
                write(Wire.line(ErrorMessage(message: error.description, id: error.id)), context: context)
                return
            }
            session.requestsServed += 1
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            inFlight = true
            server.handle(request, from: session) { [weak self] reply in
                guard let self else { return }
                let context = loopBound.value
                self.inFlight = false
                self.write(reply, context: context)
                // A reply given at once lets the loop in serveWaiting carry on; a later one restarts it.
                if !self.serving { self.serveWaiting(context: context) }
            }
        }
    }

    /// Reads only when nothing waits and the client has read its replies: what one read brings in is all the
    /// daemon holds for it.
    private func updateReading(context: ChannelHandlerContext) {
        guard !closing else { return }
        let read = !inFlight && waiting.isEmpty && context.channel.isWritable
        context.channel.setOption(ChannelOptions.autoRead, value: read).whenComplete { _ in }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { serveWaiting(context: context) } else { updateReading(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .some(.inputClosed) {
            inputClosed = true
            serveWaiting(context: context)  // the last line may have come without a newline, with the EOF
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A client that has shut its side still gets every reply it asked for, then the connection closes.
    private func closeIfDone(context: ChannelHandlerContext) {
        if inputClosed, !inFlight, waiting.isEmpty { close(context: context) }
    }

    private func close(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        waiting.removeAll()
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A client that vanished mid-reply (EPIPE, ECONNRESET) concerns nobody else.
        close(context: context)
    }

    /// Writes one line (a reply already started is always written whole: the bound is checked before).
    private func write(_ data: Data, context: ChannelHandlerContext) {
        guard context.channel.isActive, !closing else { return }
        var buffer = context.channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}

/// Why a client was closed for what it made the daemon hold.
enum ClientLimitError: Error, CustomStringConvertible {
    case tooManyInFlight(limit: Int, unsentBytes: Int)

    var description: String {
        switch self {
        case .tooManyInFlight(let limit, let unsent):
            return "more than \(limit) requests waiting for an answer while \(unsent / 1024) KiB of replies are unread: "
                + "read the replies before sending more; closing the connection"
        }
    }
}
