import Foundation
import Locking
import NIOCore
import NIOFoundationCompat
import NIOPosix
import StepProtocol
import Timekeeping

/// A daemon's reply as stepd-web passes it on: a short line whole, or a long one (a stored range's `track`, 12 MB)
/// as the HTTP client reads it, never held whole (issue 39, point 1).
enum DaemonReply: Sendable {
    case whole(ByteBuffer)
    case streamed(ReplyReader)
}

extension DaemonLink {
    /// Sends one request on a connection of the pool and returns its reply. A reply line that ends within
    /// `WebLimits.replyHeadBytes` comes whole (an ERROR is thrown, as `request` does); a longer one comes as a
    /// stream: its bytes are read from the daemon only as fast as the HTTP client takes them, with at most
    /// `WebLimits.replyBufferBytes` waiting between the two, and the connection (and its place in the pool) is
    /// held until the last byte went or the client left.
    func reply(_ fields: [String: JSONValue]) async throws -> DaemonReply {
        var request = fields
        request["id"] = .integer(1)
        let line = try Self.line(request)
        let forRange = Self.rangeCommands.contains(fields["cmd"] ?? .null)
        if forRange { try await rangePool.acquire() }
        do {
            try await pool.acquire()
        } catch {
            if forRange { rangePool.release() }
            throw error
        }
        let pipe = ReplyPipe()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DaemonReply, any Error>) in
            let head = ResumeOnce(continuation)
            Task { [self] in
                defer {
                    pool.release()
                    if forRange { rangePool.release() }
                }
                do {
                    try await produce(line, into: pipe, head: head)
                    pipe.finish(nil)
                    head.resume(throwing: DaemonError.closed(path: socketPath, message: nil))
                } catch {
                    if !head.resume(throwing: error) { pipe.finish(error) }
                }
            }
        }
    }

    /// The requests that hold a connection of `rangePool` as well.
    static let rangeCommands: [JSONValue] = ["track", "visits", "history"].map { .string($0) }

    /// Reads the greeting, writes the request and reads until its reply: whole, or its first bytes and then the
    /// rest into `pipe`.
    private func produce(_ request: ByteBuffer, into pipe: ReplyPipe, head: ResumeOnce) async throws {
        let path = socketPath
        let timeoutSeconds = WebLimits.daemonReplySeconds
        // Small reads and a short inbound queue: what stepd-web holds of a stream is the pipe's budget and little more.
        let channel = try await connect(path, readBytes: WebLimits.replyReadBytes,
                                        configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2)))
        let expired = Locked(false)
        let deadline = channel.channel.eventLoop.scheduleTask(in: .seconds(timeoutSeconds)) { [channel = channel.channel] in
            expired.withLock { $0 = true }
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        do {
            try await channel.executeThenClose { inbound, outbound in
                var chunks = inbound.makeAsyncIterator()
                var pending = ByteBuffer()
                func nextLine() async throws -> ByteBuffer? {
                    while true {
                        if let newline = pending.readableBytesView.firstIndex(of: 0x0A) {
                            let line = pending.readSlice(length: newline - pending.readerIndex)
                            pending.moveReaderIndex(forwardBy: 1)
                            return line
                        }
                        if pending.readableBytes >= WebLimits.replyHeadBytes { return nil }
                        guard var chunk = try await chunks.next() else { throw DaemonError.closed(path: path, message: nil) }
                        pending.writeBuffer(&chunk)
                    }
                }
                guard let greeting = try await nextLine() else {
                    throw DaemonError.closed(path: path, message: "a greeting of more than \(WebLimits.replyHeadBytes) bytes")
                }
                if let error = try? JSONDecoder().decode(ErrorMessage.self, from: greeting), error.class == "ERROR" {
                    throw DaemonError.closed(path: path, message: error.message)
                }
                try await outbound.write(request)
                while let line = try await nextLine() {
                    // As `request`: the reply has the id; an ERROR without one answers the one request in flight.
                    guard let message = MessageHead(line: Data(buffer: line)) else { continue }
                    let isError = message.class == ErrorMessage.messageClass
                    guard message.id == .integer(1) || (isError && message.id == nil) else { continue }
                    if isError {
                        let error = try JSONDecoder().decode(ErrorMessage.self, from: line)
                        throw DaemonError.refused(code: error.errorCode, message: error.message)
                    }
                    head.resume(returning: .whole(line))
                    return
                }
                // A line longer than any ERROR or event: the one reply in flight (this connection watches nothing).
                guard Self.isReplyStart(pending) else {
                    throw DaemonError.closed(path: path, message: "a line of more than \(WebLimits.replyHeadBytes) bytes that is no reply")
                }
                deadline.cancel()
                guard head.resume(returning: .streamed(ReplyReader(pipe))) else { return }
                var piece = pending
                while true {
                    if let newline = piece.readableBytesView.firstIndex(of: 0x0A) {
                        try await pipe.send(piece.getSlice(at: piece.readerIndex, length: newline - piece.readerIndex)!)
                        return
                    }
                    try await pipe.send(piece)
                    guard let chunk = try await chunks.next() else { throw DaemonError.closed(path: path, message: nil) }
                    piece = chunk
                }
            }
        } catch {
            if expired.withLock({ $0 }) { throw DaemonError.timedOut(path: path, seconds: timeoutSeconds) }
            throw error
        }
    }

    /// `{"class":"X"` with X not ERROR: how every reply line starts (Wire writes `class` first).
    static func isReplyStart(_ buffer: ByteBuffer) -> Bool {
        let prefix = String(decoding: buffer.readableBytesView.prefix(64), as: UTF8.self)
        return prefix.hasPrefix("{\"class\":\"") && !prefix.hasPrefix("{\"class\":\"ERROR\"")
    }
}

/// A continuation resumed at most once, by whichever comes first: the reply's head or a failure.
private final class ResumeOnce: Sendable {
    private let continuation: Locked<CheckedContinuation<DaemonReply, any Error>?>

    init(_ continuation: CheckedContinuation<DaemonReply, any Error>) { self.continuation = Locked(continuation) }

    /// Whether this call resumed it.
    @discardableResult func resume(returning value: DaemonReply) -> Bool {
        guard let taken = continuation.withLock({ value -> CheckedContinuation<DaemonReply, any Error>? in
            defer { value = nil }
            return value
        }) else { return false }
        taken.resume(returning: value)
        return true
    }

    @discardableResult func resume(throwing error: any Error) -> Bool {
        guard let taken = continuation.withLock({ value -> CheckedContinuation<DaemonReply, any Error>? in
            defer { value = nil }
            return value
        }) else { return false }
        taken.resume(throwing: error)
        return true
    }
}

/// Why a streamed reply stopped before its end.
enum ReplyStreamError: Error, CustomStringConvertible {
    case readerLeft
    case stalled(seconds: Int64)

    var description: String {
        switch self {
        case .readerLeft: return "the HTTP client left before the reply's end"
        case .stalled(let seconds): return "the HTTP client took none of the reply for \(seconds) s"
        }
    }
}

/// The bytes of one streamed reply between the task that reads them from the daemon and the HTTP response that
/// writes them: at most `budgetBytes` held (the per-request budget; with the pool's bound on connections, all
/// the streams together hold at most `WebLimits.daemonConnections` times it). The daemon side waits for room;
/// when the HTTP client takes nothing for `stallSeconds` it gives up, so that a client that never reads does
/// not keep a connection of the pool for long.
final class ReplyPipe: Sendable {
    private struct State {
        var chunks: [ByteBuffer] = []
        var bufferedBytes = 0
        var end: Result<Void, any Error>?
        var readerGone = false
        var reader: CheckedContinuation<ByteBuffer?, any Error>?
        var writer: (id: UInt64, continuation: CheckedContinuation<Void, any Error>)?
        var waits: UInt64 = 0
    }

    let budgetBytes: Int
    let stallSeconds: Int64
    /// The bound on a stall of the HTTP client.
    private let clock: any DaemonClock
    private let state = Locked(State())

    init(budgetBytes: Int = WebLimits.replyBufferBytes, stallSeconds: Int64 = WebLimits.replyStallSeconds,
         clock: any DaemonClock = SystemClock()) {
        self.budgetBytes = budgetBytes
        self.clock = clock
        self.stallSeconds = stallSeconds
    }

    /// Hands a piece on; waits while more than the budget is held. Throws when the reader left or took nothing
    /// for `stallSeconds`.
    func send(_ chunk: ByteBuffer) async throws {
        guard chunk.readableBytes > 0 else { return }
        let (reader, mustWait, gone) = state.withLock { state -> (CheckedContinuation<ByteBuffer?, any Error>?, Bool, Bool) in
            if state.readerGone { return (nil, false, true) }
            if let reader = state.reader {
                state.reader = nil
                return (reader, false, false)
            }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.readableBytes
            return (nil, state.bufferedBytes > budgetBytes, false)
        }
        if gone { throw ReplyStreamError.readerLeft }
        if let reader {
            reader.resume(returning: chunk)
            return
        }
        guard mustWait else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let (id, now) = state.withLock { state -> (UInt64, Result<Void, any Error>?) in
                if state.readerGone { return (0, .failure(ReplyStreamError.readerLeft)) }
                if state.bufferedBytes <= budgetBytes { return (0, .success(())) }
                state.waits += 1
                state.writer = (state.waits, continuation)
                return (state.waits, nil)
            }
            if let now {
                continuation.resume(with: now)
                return
            }
            clock.run(after: Double(stallSeconds), on: .global()) { [self] in
                let stalled = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                    guard let writer = state.writer, writer.id == id else { return nil }
                    state.writer = nil
                    return writer.continuation
                }
                stalled?.resume(throwing: ReplyStreamError.stalled(seconds: stallSeconds))
            }
        }
    }

    /// The daemon side is done: at the reply's end (nil) or with what went wrong.
    func finish(_ error: (any Error)?) {
        let reader = state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.reader = nil }
            return state.reader
        }
        if let error { reader?.resume(throwing: error) } else { reader?.resume(returning: nil) }
    }

    /// The next piece, nil at the end; throws what stopped the daemon side.
    func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
            let (result, writer) = state.withLock { state -> (Result<ByteBuffer?, any Error>?, CheckedContinuation<Void, any Error>?) in
                if !state.chunks.isEmpty {
                    let chunk = state.chunks.removeFirst()
                    state.bufferedBytes -= chunk.readableBytes
                    var writer: CheckedContinuation<Void, any Error>?
                    if state.bufferedBytes <= budgetBytes, let waiting = state.writer {
                        state.writer = nil
                        writer = waiting.continuation
                    }
                    return (.success(chunk), writer)
                }
                switch state.end {
                case .success?: return (.success(nil), nil)
                case .failure(let error)?: return (.failure(error), nil)
                case nil:
                    state.reader = continuation
                    return (nil, nil)
                }
            }
            writer?.resume()
            if let result { continuation.resume(with: result) }
        }
    }

    /// The HTTP side is gone (its client closed, or the response was never written): what is held is dropped and
    /// the daemon side stops at its next piece.
    func readerLeft() {
        let writer = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.readerGone = true
            state.chunks.removeAll()
            state.bufferedBytes = 0
            defer { state.writer = nil }
            return state.writer?.continuation
        }
        writer?.resume(throwing: ReplyStreamError.readerLeft)
    }
}

/// The HTTP side's handle on a streamed reply. Dropped unread (the response never written), it tells the pipe,
/// so that the daemon connection is not held for nothing.
final class ReplyReader: Sendable {
    private let pipe: ReplyPipe

    init(_ pipe: ReplyPipe) { self.pipe = pipe }

    func next() async throws -> ByteBuffer? { try await pipe.next() }

    deinit { pipe.readerLeft() }
}
