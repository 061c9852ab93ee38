import NIOCore

/// One request line, or word that a line was too long and has been thrown away.
enum LineFrame {
    case line(ByteBuffer)
    case tooLong
}

/// Splits the byte stream at newlines. A line longer than `maximumLength` is discarded up to its newline and
/// reported once, so a client that sends garbage keeps its connection but cannot make the daemon buffer it.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = LineFrame
    let maximumLength: Int
    private var discarding = false

    init(maximumLength: Int) { self.maximumLength = maximumLength }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maximumLength {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                if !discarding {
                    discarding = true
                    context.fireChannelRead(wrapInboundOut(.tooLong))
                }
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if discarding {
            discarding = false
            return .continue
        }
        if length > maximumLength {
            context.fireChannelRead(wrapInboundOut(.tooLong))
            return .continue
        }
        if line.readableBytesView.last == UInt8(ascii: "\r") { line.moveWriterIndex(to: line.writerIndex - 1) }
        context.fireChannelRead(wrapInboundOut(.line(line)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last request without its newline is still a request.
        if !discarding, buffer.readableBytes > 0, buffer.readableBytes <= maximumLength {
            let line = buffer.readSlice(length: buffer.readableBytes)!
            context.fireChannelRead(wrapInboundOut(.line(line)))
        }
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return .needMoreData
    }
}
