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
        guard let session else { return }
        switch unwrapInboundIn(data) {
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
            server.handle(request, from: session) { [weak self] reply in
                self?.write(reply, context: loopBound.value)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        }
        context.fireChannelWritabilityChanged()
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
        if !context.channel.isWritable {
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        }
    }
}
