import NIOCore
import StepProtocol

/// One request line, or word that a line was too long and has been thrown away, with the id it carried.
enum LineFrame {
    case line(ByteBuffer)
    case tooLong(id: JSONValue?)
}

/// Splits the byte stream at newlines. A line longer than `maximumLength` is discarded as it comes, up to its
/// newline, and reported once at its end, so a client that sends garbage keeps its connection but cannot make
/// the daemon buffer it. The discarded bytes go through a `RequestIDScanner`, so the ERROR carries the line's
/// `id` wherever it stood in the line.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = LineFrame
    let maximumLength: Int
    /// Set while a line over the limit is being thrown away.
    private var discarding: RequestIDScanner?

    init(maximumLength: Int) { self.maximumLength = maximumLength }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if discarding != nil || buffer.readableBytes > maximumLength {
                if discarding == nil { discarding = RequestIDScanner() }
                discarding!.scan(buffer.readableBytesView)
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if var scanner = discarding {
            discarding = nil
            scanner.scan(line.readableBytesView)
            scanner.finish()
            context.fireChannelRead(wrapInboundOut(.tooLong(id: scanner.id)))
            return .continue
        }
        if length > maximumLength {
            context.fireChannelRead(wrapInboundOut(.tooLong(id: RequestIDScanner.id(in: line.readableBytesView))))
            return .continue
        }
        if line.readableBytesView.last == UInt8(ascii: "\r") { line.moveWriterIndex(to: line.writerIndex - 1) }
        context.fireChannelRead(wrapInboundOut(.line(line)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last request without its newline is still a request; a last line over the limit still gets its ERROR.
        if var scanner = discarding {
            discarding = nil
            scanner.scan(buffer.readableBytesView)
            scanner.finish()
            context.fireChannelRead(wrapInboundOut(.tooLong(id: scanner.id)))
        } else if buffer.readableBytes > maximumLength {
            context.fireChannelRead(wrapInboundOut(.tooLong(id: RequestIDScanner.id(in: buffer.readableBytesView))))
        } else if buffer.readableBytes > 0 {
            let line = buffer.readSlice(length: buffer.readableBytes)!
            context.fireChannelRead(wrapInboundOut(.line(line)))
        }
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return .needMoreData
    }
}
