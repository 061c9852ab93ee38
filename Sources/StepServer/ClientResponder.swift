import Foundation
import NIOCore
import StepProtocol

/// What a connection asks of the daemon: ClientHandler does the framing, the order and the limits, and hands
/// each parsed request here; the reply comes back as one encoded line. ProtocolServer is the real one; every
/// method runs on the connection's event loop, and `reply` must be called there, once.
protocol ClientResponder: AnyObject {
    /// Registers a new client, or says why it is refused (the ERROR it gets before the connection closes).
    func clientConnected(_ channel: Channel, credentials: PeerCredentials?) -> Result<ClientSession, ConnectionRefusal>
    func clientDisconnected(_ session: ClientSession)
    /// The client is being closed for what it made the daemon hold; the responder counts and logs it.
    func clientOverLimit(_ session: ClientSession, reason: ClientLimitError)
    /// A long reply could not be finished and the client is being closed; the responder logs why.
    func replyFailed(_ session: ClientSession, reason: String)
    /// Answers one request: at once, or later from another queue (hopping back to the event loop).
    func handle(_ request: Request, from session: ClientSession, reply: @escaping (Reply) -> Void)
}

/// The answer to one request.
enum Reply {
    /// One encoded line.
    case line(Data)
    /// A long line (a track document), written a piece at a time as the client reads it.
    case document(ReplyPieces)
}

/// A long reply line in pieces: each piece is made once the client has read the ones before, so the daemon
/// holds a piece or two per client, never the whole line. Called on the connection's event loop.
protocol ReplyPieces: AnyObject {
    /// Whether the reply holds data of its own (a stored range's path), which a client that reads none of it
    /// must not keep: then it is closed after `stallTimeout`. A reply made from data shared with the engine
    /// costs the daemon a piece and its unsent output, as any reply does, and waits for its client.
    var holdsOwnData: Bool { get }
    /// The next piece, `.later` while it is being made (then `ready` is called on the event loop when it is),
    /// or `.end` when the line, its newline included, is out.
    func next(allocator: ByteBufferAllocator, ready: @escaping @Sendable () -> Void) -> ReplyPiece
    /// The connection closed before the end: give back what the reply holds.
    func discard()
}

extension ReplyPieces {
    func discard() {}
}

enum ReplyPiece {
    case piece(ByteBuffer)
    case later
    case end
    /// The rest cannot be made (the stored range could not be read to its end): the connection is closed, so
    /// that the client sees a cut line rather than a whole one that lies.
    case failed(String)
}

/// A reply line longer than a connection's budget (a week of minute bins, thousands of stays), written a slice
/// at a time as the client reads it. It was made whole, so it counts in the ReplyBudget until it is out, and a
/// client that reads none of it is closed like one that leaves a stored track unread.
final class LinePieces: ReplyPieces {
    static let sliceBytes = 16 * 1024
    let holdsOwnData = true
    private let line: Data
    private var offset = 0
    private var charged: Int
    private let budget: ReplyBudget

    init(_ line: Data, budget: ReplyBudget) {
        self.line = line
        self.budget = budget
        charged = line.count
        budget.charge(charged)
    }

    func next(allocator: ByteBufferAllocator, ready: @escaping @Sendable () -> Void) -> ReplyPiece {
        guard offset < line.count else {
            discard()
            return .end
        }
        let end = min(line.count, offset + Self.sliceBytes)
        defer { offset = end }
        return .piece(allocator.buffer(bytes: line[(line.startIndex + offset)..<(line.startIndex + end)]))
    }

    func discard() {
        budget.release(charged)
        charged = 0
    }
}

/// Why a connection is refused at once, with an ERROR that says so.
enum ConnectionRefusal: CodedError {
    var code: ErrorCode { .tooManyClients }

    case full(limit: Int)
    case reserved(open: Int)
    case perUser(uid: uid_t, limit: Int)

    var description: String {
        switch self {
        case .full(let limit): return "too many clients (limit \(limit)); try again later"
        case .reserved(let open):
            return "too many clients: the \(open) slots open to every user are taken (the rest are kept for root); try again later"
        case .perUser(let uid, let limit):
            return "too many connections from uid \(uid) (limit \(limit) per user); close some and try again"
        }
    }
}

/// Why a client was closed for what it made the daemon hold.
enum ClientLimitError: CodedError {
    var code: ErrorCode { .notReading }

    case tooManyInFlight(limit: Int, unsentBytes: Int, seconds: Int)
    case documentUnread(seconds: Int)

    var description: String {
        switch self {
        case .tooManyInFlight(let limit, let unsent, let seconds):
            return "more than \(limit) requests waiting for an answer while \(unsent / 1024) KiB of replies are unread, "
                + "none read for \(seconds) s: read the replies before sending more; closing the connection"
        case .documentUnread(let seconds):
            return "a document is being sent and none of it was read for \(seconds) s; closing the connection"
        }
    }
}
