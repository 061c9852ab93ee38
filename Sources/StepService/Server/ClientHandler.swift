import Foundation
import NIOCore
import StepProtocol

/// One connected client: greets it with VERSION, answers its requests in order, and registers its watches.
/// A client that stops reading its replies is stopped being read from (back-pressure), so it cannot make the
/// daemon buffer without bound.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias OutboundOut = ByteBuffer

    private let server: ProtocolServer
    private let maximumLineLength: Int
    private var session: ClientSession?
    /// Request lines read and not yet answered, and whether one is being answered on another queue.
    private var waiting = CircularBuffer<LineFrame>()
    private var inFlight = false
    private var serving = false
    private var inputClosed = false

    init(server: ProtocolServer, maximumLineLength: Int) {
        self.server = server
        self.maximumLineLength = maximumLineLength
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        guard let session = server.clientConnected(channel) else {
            let message = ErrorMessage(message: "too many clients (limit \(server.configuration.maximumClients)); try again later")
            write(Wire.line(message), context: context)
            context.close(promise: nil)
            return
        }
        self.session = session
        PeerCredentials.of(channel).whenSuccess { session.credentials = $0 }
        write(Wire.line(VersionMessage(release: stepdRelease)), context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let session { server.clientDisconnected(session) }
        session = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard session != nil else { return }
        waiting.append(unwrapInboundIn(data))
        serveWaiting(context: context)
    }

    /// Answers the lines read so far, in order. A request answered on another queue (reset, history) holds
    /// the ones after it, and reading stops meanwhile: replies keep the order of requests, and a client that
    /// pipelines thousands of slow requests makes the daemon hold only what one read brought in.
    private func serveWaiting(context: ChannelHandlerContext) {
        serving = true
        while !inFlight, let frame = waiting.popFirst() { serve(frame, context: context) }
        serving = false
        updateReading(context: context)
        closeIfDone(context: context)
    }

    private func serve(_ frame: LineFrame, context: ChannelHandlerContext) {
        guard let session else { return }
        switch frame {
        case .tooLong:
            write(Wire.line(ErrorMessage(message: RequestError.tooLong(limit: maximumLineLength).description)), context: context)
        case .line(let buffer):
            let bytes = Data(buffer.readableBytesView)
            if bytes.allSatisfy({ $0 == 32 || $0 == 9 }) { return }  // blank lines are keep-alives
            let request: Request
            do {
                request = try Request.parse(bytes)
            } catch {
                write(Wire.line(ErrorMessage(message: "\(error)")), context: context)
                return
            }
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            inFlight = true
            server.handle(request, from: session) { [weak self] reply in
                guard let self else { return }
                let context = loopBound.value
                self.write(reply, context: context)
                self.inFlight = false
                // A reply given at once lets the loop in serveWaiting carry on; a later one restarts it.
                if !self.serving { self.serveWaiting(context: context) }
            }
        }
    }

    private func updateReading(context: ChannelHandlerContext) {
        let read = !inFlight && waiting.isEmpty && context.channel.isWritable
        context.channel.setOption(ChannelOptions.autoRead, value: read).whenComplete { _ in }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        updateReading(context: context)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .some(.inputClosed) {
            inputClosed = true
            closeIfDone(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A client that has shut its side still gets every reply it asked for, then the connection closes.
    private func closeIfDone(context: ChannelHandlerContext) {
        if inputClosed, !inFlight, waiting.isEmpty { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A client that vanished mid-reply (EPIPE, ECONNRESET) concerns nobody else.
        context.close(promise: nil)
    }

    private func write(_ data: Data, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        if !context.channel.isWritable { updateReading(context: context) }
    }
}
