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
    /// Answers one request: at once, or later from another queue (hopping back to the event loop).
    func handle(_ request: Request, from session: ClientSession, reply: @escaping (Data) -> Void)
}

/// Why a connection is refused at once, with an ERROR that says so.
enum ConnectionRefusal: Error, CustomStringConvertible {
    case full(limit: Int)
    case reserved(open: Int)
    case perUser(uid: uid_t, limit: Int)

    var description: String {
        switch self {
        case .full(let limit): return "too many clients (limit \(limit)); try again later"
        case .reserved(let open):
            return "too many clients: the \(open) slots open to every user are taken (the rest are kept for root and the admin group); try again later"
        case .perUser(let uid, let limit):
            return "too many connections from uid \(uid) (limit \(limit) per user); close some and try again"
        }
    }
}

/// Why a client was closed for what it made the daemon hold.
enum ClientLimitError: Error, CustomStringConvertible {
    case tooManyInFlight(limit: Int, unsentBytes: Int)

    var description: String {
        switch self {
        case .tooManyInFlight(let limit, let unsent):
            return "more than \(limit) requests waiting for an answer while \(unsent / 1024) KiB of replies are unread: "
                + "read the replies before sending more; closing the connection"
        }
    }
}
