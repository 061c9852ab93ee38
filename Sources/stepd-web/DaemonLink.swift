import Foundation
import NIOCore
import NIOFoundationCompat
import NIOExtras
import NIOPosix
import StepProtocol

/// Why stepd-web could not get an answer from the daemon; the text goes to the page and the log.
enum DaemonError: Error, CustomStringConvertible {
    case unreachable(path: String, reason: String)
    /// The daemon closed the connection; `message` is the ERROR it sent first, if any (too many clients).
    case closed(path: String, message: String?)
    /// The daemon answered with an ERROR (a bad history range, a reset it does not permit).
    case refused(message: String)

    var description: String {
        switch self {
        case .unreachable(let path, let reason): return "cannot connect to stepd at \(path): \(reason)"
        case .closed(let path, let message?): return "stepd at \(path) closed the connection: \(message)"
        case .closed(let path, nil): return "stepd at \(path) closed the connection"
        case .refused(let message): return message
        }
    }
}

/// Connections to the daemon's Unix socket, speaking docs/protocol.md: JSON lines, VERSION first.
struct DaemonLink: Sendable {
    typealias Lines = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// The socket given with --socket, or nil to look where stepctl looks (SocketPath.forClient) at every
    /// connect, so that a daemon started after stepd-web, or moved, is found.
    let fixedPath: String?

    var socketPath: String { fixedPath ?? SocketPath.forClient() }

    /// Connects, reads the greeting (VERSION, or the ERROR of a daemon that is full), and runs `body` with the
    /// rest of the lines; the connection is closed when `body` returns or throws.
    func withConnection<Result: Sendable>(
        _ body: (_ lines: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
                 _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, _ path: String) async throws -> Result
    ) async throws -> Result {
        let path = socketPath
        let channel: Lines
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                        return try Lines(wrappingChannelSynchronously: channel)
                    }
                }
        } catch let error as IOError {
            throw DaemonError.unreachable(path: path, reason: String(cString: strerror(error.errnoCode)))
        } catch {
            throw DaemonError.unreachable(path: path, reason: "\(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()
            guard let greeting = try await lines.next() else { throw DaemonError.closed(path: path, message: nil) }
            if let error = try? JSONDecoder().decode(ErrorMessage.self, from: greeting), error.class == "ERROR" {
                throw DaemonError.closed(path: path, message: error.message)
            }
            return try await body(&lines, outbound, path)
        }
    }

    /// Sends one request and returns its reply line as the daemon wrote it; an ERROR reply is thrown.
    func request(_ fields: [String: JSONValue]) async throws -> ByteBuffer {
        var request = fields
        request["id"] = .integer(1)
        let line = try Self.line(request)
        return try await withConnection { lines, outbound, path in
            try await outbound.write(line)
            // This connection watches nothing, so no event comes; still, match on the id as a client must.
            while let reply = try await lines.next() {
                guard let head = MessageHead(line: Data(buffer: reply)), head.id == .integer(1) else { continue }
                if head.class == ErrorMessage.messageClass {
                    throw DaemonError.refused(message: try JSONDecoder().decode(ErrorMessage.self, from: reply).message)
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

/// JSON as the daemon writes it: slashes left alone ("/run/stepd/stepd.sock", not "\\/run\\/...").
let jsonEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return encoder
}()
