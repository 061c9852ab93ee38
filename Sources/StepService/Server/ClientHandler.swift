import Foundation
import NIOCore
import StepProtocol

/// One connected client: greets it with VERSION, answers its requests in order, and closes it when it is done
/// or over a limit. Owned by the channel's event loop.
///
/// What a client can make the daemon hold is bounded (issue 14): a request is answered as soon as it is read,
/// but only while less than `maximumUnsentBytes` of earlier output is unread; reading stops while any request
/// waits; and a client with more than `maximumRequestsInFlight` requests waiting behind output it does not read
/// is closed with an ERROR and a logged reason. A closed client's waiting requests are dropped, never computed.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias OutboundOut = ByteBuffer

    /// What the connection is doing. `state` changes only in the methods of the "Transitions" part below:
    ///
    ///     connecting           → open(idle)           accepted, VERSION sent
    ///                          → closing              refused, ERROR sent
    ///     open(idle)           → open(serving)        a line read, or the client read its replies
    ///     open(serving)        → open(dispatching)    a request handed to the responder
    ///     open(dispatching)    → open(serving)        its reply came at once
    ///                          → open(awaitingReply)  it comes later, from another queue
    ///     open(awaitingReply)  → open(idle)           the reply came (then serving again)
    ///     open(serving)        → open(idle)           nothing left to answer, or the client stopped reading
    ///     open(idle, shut)     → closing              the client shut its side and has every reply
    ///     open, connecting     → closing              over the in-flight limit, or an error
    ///     any                  → closed               the channel is inactive
    enum State {
        /// Accepted by the socket; not yet registered with the daemon (before channelActive).
        case connecting
        /// Registered: `phase` says what it is doing with requests, `input` whether the client may send more.
        case open(ClientSession, Phase, Input)
        /// Refused, over a limit, or failed: nothing more is read, answered or written. The session (nil for a
        /// refused client) is unregistered once the channel is inactive.
        case closing(ClientSession?)
        /// The channel is gone.
        case closed

        enum Phase: Equatable {
            /// Nothing being answered: reads while the client keeps up with its replies.
            case idle
            /// Answering the lines read so far, one after another, in this call stack.
            case serving
            /// A request was just handed to the responder, in this call stack, and its reply has not come.
            case dispatching
            /// A request is being answered on another queue (reset, history, track): later lines wait.
            case awaitingReply
        }

        enum Input: Equatable {
            case open
            /// The client shut its side (half-close): it still gets every reply it asked for, then the close.
            case shut
        }
    }

    private let responder: ClientResponder
    private let limits: ClientLimits
    private(set) var state = State.connecting
    /// Request lines read and not yet answered, oldest first.
    private var waiting = CircularBuffer<LineFrame>()

    init(responder: ClientResponder, limits: ClientLimits) {
        self.responder = responder
        self.limits = limits
    }

    /// Whether the handler wants more input: only when nothing waits and the client has read its replies, so
    /// that what one read brings in is all the daemon holds for it.
    func wantsToRead(writable: Bool) -> Bool {
        guard case .open(_, .idle, _) = state else { return false }
        return waiting.isEmpty && writable
    }

    // MARK: Channel events

    func channelActive(context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        switch responder.clientConnected(context.channel, credentials: PeerCredentials.of(context.channel)) {
        case .success(let session):
            accept(session)
            write(Wire.line(VersionMessage(release: stepdRelease)), context: context)
        case .failure(let refusal):
            write(Wire.line(ErrorMessage(message: refusal.description)), context: context)
            close(context: context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        if let session = becomeClosed() { responder.clientDisconnected(session) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.eventLoop.assertInEventLoop()
        guard case .open(let session, _, _) = state else { return }
        waiting.append(unwrapInboundIn(data))
        serveWaiting(context: context)
        // Requests pile up only behind unread output or a slow request. Behind a slow one (history, track)
        // they wait, a read's worth at most; behind output the client does not read, it is not coming back.
        if case .open = state, waiting.count > limits.maximumRequestsInFlight, !context.channel.isWritable {
            let reason = ClientLimitError.tooManyInFlight(limit: limits.maximumRequestsInFlight,
                                                          unsentBytes: limits.maximumUnsentBytes)
            responder.clientOverLimit(session, reason: reason)
            write(Wire.line(ErrorMessage(message: reason.description)), context: context)
            close(context: context)
        }
    }

    /// The channel's high water mark is `maximumUnsentBytes` (ProtocolServer.bootstrap); it turns writable
    /// again, which restarts serving, once half of that is read.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        if context.channel.isWritable { serveWaiting(context: context) } else { updateReading(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.eventLoop.assertInEventLoop()
        if event as? ChannelEvent == .some(.inputClosed) {
            shutInput()
            serveWaiting(context: context)  // the last line may have come without a newline, with the EOF
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A client that vanished mid-reply (EPIPE, ECONNRESET) concerns nobody else.
        close(context: context)
    }

    // MARK: Transitions

    /// Answers the lines read so far, in order, while the client keeps up with reading. A request answered
    /// on another queue holds the ones after it; so does output left unread.
    private func serveWaiting(context: ChannelHandlerContext) {
        guard case .open(let session, .idle, _) = state else { return }
        enter(.serving)
        while case .open(_, .serving, _) = state, context.channel.isWritable, let frame = waiting.popFirst() {
            serve(frame, session: session, context: context)
        }
        if case .open(_, .serving, _) = state { enter(.idle) }
        updateReading(context: context)
        if case .open(_, .idle, .shut) = state, waiting.isEmpty { close(context: context) }
    }

    private func serve(_ frame: LineFrame, session: ClientSession, context: ChannelHandlerContext) {
        let bytes: Data
        switch frame {
        case .tooLong:
            let error = RequestError.tooLong(limit: limits.maximumLineLength)
            return write(Wire.line(ErrorMessage(message: error.description)), context: context)
        case .line(let buffer):
            bytes = Data(buffer.readableBytesView)
        }
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 }) { return }  // blank lines are keep-alives
        let request: Request
        do {
            request = try Request.parse(bytes)
        } catch {
            return write(Wire.line(ErrorMessage(message: error.description, id: error.id)), context: context)
        }
        session.requestsServed += 1
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        enter(.dispatching)
        responder.handle(request, from: session) { [weak self] reply in
            self?.replied(reply, context: loopBound.value)
        }
        if case .open(_, .dispatching, _) = state { enter(.awaitingReply) }
    }

    /// A reply given at once lets the loop in serveWaiting carry on; a later one restarts it.
    private func replied(_ reply: Data, context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        guard case .open(_, let phase, _) = state else { return }  // closed meanwhile: the reply is dropped
        write(reply, context: context)
        switch phase {
        case .dispatching: enter(.serving)
        case .awaitingReply:
            enter(.idle)
            serveWaiting(context: context)
        case .idle, .serving: assertionFailure("a reply without a request in flight")
        }
    }

    private func accept(_ session: ClientSession) {
        guard case .connecting = state else { return }
        state = .open(session, .idle, .open)
    }

    private func shutInput() {
        guard case .open(let session, let phase, .open) = state else { return }
        state = .open(session, phase, .shut)
    }

    /// Moves an open connection to `phase`; a closing one stays closing.
    private func enter(_ phase: State.Phase) {
        guard case .open(let session, _, let input) = state else { return }
        state = .open(session, phase, input)
    }

    private func close(context: ChannelHandlerContext) {
        switch state {
        case .connecting: state = .closing(nil)
        case .open(let session, _, _): state = .closing(session)
        case .closing, .closed: return
        }
        waiting.removeAll()
        context.close(promise: nil)
    }

    /// The channel is gone: returns the session to unregister, if there is one.
    private func becomeClosed() -> ClientSession? {
        let session: ClientSession?
        switch state {
        case .open(let s, _, _), .closing(let s?): session = s
        case .connecting, .closing(nil), .closed: session = nil
        }
        state = .closed
        waiting.removeAll()  // a closed client's queued work is dropped, never computed
        return session
    }

    // MARK: Output

    private func updateReading(context: ChannelHandlerContext) {
        guard case .open = state else { return }
        let read = wantsToRead(writable: context.channel.isWritable)
        context.channel.setOption(ChannelOptions.autoRead, value: read).whenComplete { _ in }
    }

    /// Writes one line (a reply already started is always written whole: the bound is checked before).
    private func write(_ data: Data, context: ChannelHandlerContext) {
        switch state {
        case .connecting, .open: break
        case .closing, .closed: return
        }
        guard context.channel.isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
