import Foundation
import NIOCore
import StepProtocol

/// One connected client's state, owned by the server's event loop.
final class ClientSession {
    let channel: Channel
    /// Taken from the socket at accept, never looked up again (PeerCredentials).
    let credentials: PeerCredentials?
    /// Root, the daemon's user or the admin group: may reset, may use the kept slots, no per-user limit.
    let privileged: Bool
    var watched: Set<WatchClass> = []
    var motionRateHz = 10.0
    /// The sample-clock time of the last MOTION sent, to thin 60 Hz down to the rate asked for.
    var lastMotionSampleTime = -Double.infinity
    var requestsServed = 0

    init(channel: Channel, credentials: PeerCredentials?, privileged: Bool) {
        self.channel = channel
        self.credentials = credentials
        self.privileged = privileged
    }

    /// "uid 1000, pid 4242", for logs.
    var who: String { credentials?.description ?? "an unidentified client" }
}

/// What one connection may make the daemon hold.
struct ClientLimits: Sendable {
    var maximumLineLength: Int
    /// Requests read and not yet answered behind unread output; with one more, a client that reads nothing
    /// for `stallTimeout` is closed.
    var maximumRequestsInFlight: Int
    /// No reply is started while this much earlier output is still unread by the client.
    var maximumUnsentBytes: Int
    /// How long a client may read nothing of its output while the daemon holds work for it (more than
    /// `maximumRequestsInFlight` requests, or a document being written).
    var stallTimeout: TimeAmount = .seconds(3)
}
