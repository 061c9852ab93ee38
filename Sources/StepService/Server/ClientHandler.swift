import Foundation
import NIOCore
import StepProtocol

/// One connected client: greets it with VERSION, answers its requests in order, and registers its watches.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias OutboundOut = ByteBuffer

    private let server: ProtocolServer
    private let maximumLineLength: Int
    // A client may send its requests and shut its side down (`echo ... | socat`); replies that come later
    // from another queue (reset, history) still reach it: the channel closes once they are written.
    private var pendingReplies = 0
    private var inputClosed = false

    init(server: ProtocolServer, maximumLineLength: Int) {
        self.server = server
        self.maximumLineLength = maximumLineLength
    }

    func channelActive(context: ChannelHandlerContext) {
        server.clientConnected(context.channel)
        send(VersionMessage(release: stepdRelease), context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.clientDisconnected(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .tooLong:
            send(ErrorMessage(message: RequestError.tooLong(limit: maximumLineLength).description), context: context)
        case .line(let buffer):
            let bytes = Data(buffer.readableBytesView)
            if bytes.allSatisfy({ $0 == 32 || $0 == 9 }) { return }  // blank lines are keep-alives
            let request: Request
            do {
                request = try Request.parse(bytes)
            } catch {
                send(ErrorMessage(message: "\(error)"), context: context)
                return
            }
            pendingReplies += 1
            server.handle(request, from: context.channel) { [weak self] reply in
                guard let self else { return }
                context.eventLoop.assertInEventLoop()
                self.write(reply, context: context)
                self.pendingReplies -= 1
                self.closeIfDone(context: context)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .some(.inputClosed) {
            inputClosed = true
            closeIfDone(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func closeIfDone(context: ChannelHandlerContext) {
        if inputClosed, pendingReplies == 0 { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A client that vanished mid-reply (EPIPE, ECONNRESET) concerns nobody else.
        context.close(promise: nil)
    }

    private func send<T: Encodable>(_ message: T, context: ChannelHandlerContext) {
        write(Wire.line(message), context: context)
    }

    private func write(_ data: Data, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
