import Foundation
import NIOCore
import StepProtocol

/// One connected client: greets it with VERSION, answers its requests in order, and closes it when it is done
/// or over a limit. Owned by the channel's event loop.
///
/// What a client can make the daemon hold is bounded (issues 14 and 25): a request is answered as soon as it is
/// read, but only while less than `maximumUnsentBytes` of earlier output is unread; a long reply (a track
/// document) is written a piece at a time as the client reads it, never held whole; reading stops while any
/// request waits. A client that pipelines while it reads is served however much it sends; one that reads
/// nothing of its output for `stallTimeout` while more than `maximumRequestsInFlight` requests wait, or while a
/// document made from data of its own (a stored range) is being written to it, is closed with an ERROR and a
/// logged reason. A closed client's waiting
/// requests are dropped, never computed.
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
    ///     open(dispatching),
    ///     open(awaitingReply)  → open(streaming)      the reply is a document, written in pieces
    ///     open(awaitingReply)  → open(idle)           the reply came (then serving again)
    ///     open(streaming)      → open(idle)           the document's last piece is written (then serving again)
    ///     open(serving)        → open(idle)           nothing left to answer, or the client stopped reading
    ///     open(idle, shut)     → closing              the client shut its side and has every reply
    ///     open, connecting     → closing              stalled over a limit, or an error
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
            /// A long reply is being written a piece at a time, as the client reads (`document`).
            case streaming
        }

        enum Input: Equatable {
            case open
            /// The client shut its side (half-close): it still gets every reply it asked for, then the close.
            case shut
        }
    }

    /// The greeting, encoded once: a connection flood pays for no JSON encoding.
    private static let versionLine = Wire.line(VersionMessage(release: stepdRelease))
    private let responder: ClientResponder
    private let limits: ClientLimits
    /// What the replies of every client hold together; each write counts in it until the socket takes it.
    private let budget: ReplyBudget
    private(set) var state = State.connecting
    /// Request lines read and not yet answered, oldest first.
    private var waiting = CircularBuffer<LineFrame>()
    /// The document being written, while `streaming`.
    private var document: ReplyPieces?
    /// Armed while the client leaves its output unread and the daemon holds work for it: the output still
    /// unsent when it was armed, to tell a slow reader from one that reads nothing.
    private var stall: (timer: Scheduled<Void>, unsentBytes: Int)?

    init(responder: ClientResponder, limits: ClientLimits, budget: ReplyBudget) {
        self.responder = responder
        self.limits = limits
        self.budget = budget
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
            write(Self.versionLine, context: context)
        case .failure(let refusal):
            write(Wire.line(ErrorMessage(refusal)), context: context)
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
        guard case .open = state else { return }
        waiting.append(unwrapInboundIn(data))
        serveWaiting(context: context)
        // Requests pile up only behind unread output or a slow request, a read's worth at most. A client that
        // pipelines while it reads gets every one answered as it reads; one that reads nothing is closed.
        watchForStall(context: context)
    }

    /// The channel's high water mark is `maximumUnsentBytes` (ProtocolServer.bootstrap); it turns writable
    /// again, which restarts serving, once half of that is read.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        if context.channel.isWritable {
            disarmStall()
            if case .open(_, .streaming, _) = state { writeDocument(context: context) } else { serveWaiting(context: context) }
        } else {
            updateReading(context: context)
            watchForStall(context: context)
        }
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
        case .tooLong(let id):
            return write(Wire.line(ErrorMessage(RequestError.tooLong(limit: limits.maximumLineLength), id: id)), context: context)
        case .line(let buffer):
            bytes = Data(buffer.readableBytesView)
        }
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 }) { return }  // blank lines are keep-alives
        let request: Request
        do {
            request = try Request.parse(bytes)
        } catch {
            // Not JSON, or nested too deep: the id, if the line has one, is still the client's to match on.
            let id = error.id ?? RequestIDScanner.id(in: bytes)
            return write(Wire.line(ErrorMessage(error, id: id)), context: context)
        }
        session.requestsServed += 1
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        enter(.dispatching)
        responder.handle(request, from: session) { [weak self] reply in
            self?.replied(reply, context: loopBound.value)
        }
        if case .open(_, .dispatching, _) = state { enter(.awaitingReply) }
    }

    /// A reply given at once lets the loop in serveWaiting carry on; a later one restarts it. A document
    /// starts being written from the event loop's next turn, so that serveWaiting's loop has returned.
    private func replied(_ reply: Reply, context: ChannelHandlerContext) {
        context.eventLoop.assertInEventLoop()
        guard case .open(_, let phase, _) = state else { return }  // closed meanwhile: the reply is dropped
        switch phase {
        case .dispatching, .awaitingReply: break
        case .idle, .serving, .streaming: return assertionFailure("a reply without a request in flight")
        }
        var reply = reply
        // A line longer than the connection's budget goes out as the client reads, like a document.
        if case .line(let data) = reply, data.count > limits.maximumUnsentBytes {
            reply = .document(LinePieces(data, budget: budget))
        }
        switch reply {
        case .line(let data):
            write(data, context: context)
            if phase == .dispatching {
                enter(.serving)
            } else {
                enter(.idle)
                serveWaiting(context: context)
            }
        case .document(let pieces):
            document = pieces
            enter(.streaming)
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.execute {
                let (handler, context) = loopBound.value
                handler.writeDocument(context: context)
            }
        }
    }

    /// Writes the document's next pieces while the client keeps up, a few per turn of the event loop so that
    /// the other clients are served between them; once it is out, the requests after it are served.
    private func writeDocument(context: ChannelHandlerContext) {
        guard case .open(_, .streaming, _) = state, let pieces = document else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let resume: @Sendable () -> Void = {
            let (handler, context) = loopBound.value
            handler.writeDocument(context: context)
        }
        var written = 0
        while context.channel.isWritable {
            guard written < 4 else {
                context.flush()
                return context.eventLoop.execute(resume)  // the other clients' turn
            }
            switch pieces.next(allocator: context.channel.allocator, ready: resume) {
            case .piece(let piece):
                budget.write(piece, context: context, flush: false)
                written += 1
            case .later:
                return context.flush()
            case .failed(let reason):
                context.flush()
                if case .open(let session, _, _) = state { responder.replyFailed(session, reason: reason) }
                return close(context: context)
            case .end:
                context.flush()
                document = nil
                enter(.idle)
                return serveWaiting(context: context)
            }
        }
        context.flush()
        watchForStall(context: context)
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
        document?.discard()
        document = nil
        disarmStall()
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
        document?.discard()
        document = nil
        disarmStall()
        return session
    }

    // MARK: A client that reads nothing

    /// What the daemon holds for a client that does not read: more requests than the limit, a document made
    /// from data of its own, or any document while the replies of all clients hold the whole ReplyBudget.
    private var holdsWork: Bool {
        guard case .open(_, let phase, _) = state else { return false }
        return (phase == .streaming && (document?.holdsOwnData == true || !budget.hasRoom))
            || waiting.count > limits.maximumRequestsInFlight
    }

    /// A document being written is watched even while it holds no work: the budget may fill meanwhile.
    private func watchForStall(context: ChannelHandlerContext) {
        guard stall == nil, !context.channel.isWritable else { return }
        guard holdsWork || { if case .open(_, .streaming, _) = state { return true } else { return false } }() else { return }
        armStall(unsentBytes: unsentBytes(context), context: context)
    }

    private func armStall(unsentBytes: Int, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let timer = context.eventLoop.scheduleTask(in: limits.stallTimeout) {
            let (handler, context) = loopBound.value
            handler.stallTimeoutFired(context: context)
        }
        stall = (timer, unsentBytes)
    }

    private func disarmStall() {
        stall?.timer.cancel()
        stall = nil
    }

    /// The client read nothing for `stallTimeout`: if it read some of its output meanwhile it is only slow,
    /// and is watched again; if not, and the daemon still holds work for it, it is closed.
    private func stallTimeoutFired(context: ChannelHandlerContext) {
        guard let armed = stall else { return }
        stall = nil
        guard case .open(let session, let phase, _) = state, !context.channel.isWritable else { return }
        let unsent = unsentBytes(context)
        if !holdsWork {
            if phase == .streaming { armStall(unsentBytes: unsent, context: context) }
            return
        }
        if unsent < armed.unsentBytes { return armStall(unsentBytes: unsent, context: context) }
        let seconds = Int(limits.stallTimeout.nanoseconds / 1_000_000_000)
        let reason: ClientLimitError = phase == .streaming
            ? .documentUnread(seconds: seconds)
            : .tooManyInFlight(limit: limits.maximumRequestsInFlight, unsentBytes: limits.maximumUnsentBytes, seconds: seconds)
        responder.clientOverLimit(session, reason: reason)
        write(Wire.line(ErrorMessage(reason)), context: context)
        close(context: context)
    }

    /// Output written and not yet taken by the socket.
    private func unsentBytes(_ context: ChannelHandlerContext) -> Int {
        (try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
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
