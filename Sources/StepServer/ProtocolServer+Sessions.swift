import Foundation
import NIOCore
import StepProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Who is connected: registering and refusing clients, and what their watches ask of the engine. All on the
/// server's event loop.
extension ProtocolServer: ClientResponder {
    /// Registers a new client, or says why it is refused: the server is full, the slots left are kept for
    /// root, or the client's user already holds its share. Only root (uid 0) uses the reserve and is not
    /// counted per user: the admin group and the daemon's own user may reset, but their connections are
    /// counted like anyone's, so that a program in that group (stepd-web) cannot take every slot (issue 39).
    func clientConnected(_ channel: Channel, credentials: PeerCredentials?) -> Result<ClientSession, ConnectionRefusal> {
        loop.assertInEventLoop()
        let privileged = access.mayAdminister(credentials)
        let root = credentials?.uid == 0
        let maximum = configuration.maximumClients
        // A small --max-clients shrinks the others: one slot at least stays open to everyone.
        let open = maximum - min(configuration.reservedClients, maximum - 1)
        let perUser = min(configuration.maximumClientsPerUser, open)
        var refusal: ConnectionRefusal?
        if sessions.count >= maximum {
            refusal = .full(limit: maximum)
        } else if !root, sessions.count >= open {
            refusal = .reserved(open: open)
        } else if !root, let uid = credentials?.uid, connectionsByUID[uid, default: 0] >= perUser {
            refusal = .perUser(uid: uid, limit: perUser)
        }
        if let refusal {
            let who = credentials?.description ?? "an unidentified client"
            clientLog.log(.warning, cause: "refused uid \(credentials.map { "\($0.uid)" } ?? "?")",
                          "refused a connection from \(who): \(refusal)")
            return .failure(refusal)
        }
        let session = ClientSession(channel: channel, credentials: credentials, privileged: privileged)
        sessions[ObjectIdentifier(channel)] = session
        if let uid = credentials?.uid, uid != 0 { connectionsByUID[uid, default: 0] += 1 }
        if logger.logLevel <= .debug {
            clientLog.log(.debug, cause: "connect \(session.who)",
                          "client connected: \(session.who)\(privileged ? " (admin)" : ""); \(sessions.count) connected")
        }
        return .success(session)
    }

    func clientDisconnected(_ session: ClientSession) {
        loop.assertInEventLoop()
        guard sessions.removeValue(forKey: ObjectIdentifier(session.channel)) != nil else { return }
        if let uid = session.credentials?.uid, uid != 0 {
            connectionsByUID[uid, default: 1] -= 1
            if connectionsByUID[uid] == 0 { connectionsByUID[uid] = nil }
        }
        if logger.logLevel <= .debug {
            clientLog.log(.debug, cause: "disconnect \(session.who)",
                          "client disconnected: \(session.who) after \(session.requestsServed) requests; \(sessions.count) connected")
        }
        updateMotionDemand()
        if sessions.isEmpty { returnFreedMemorySoon() }
    }

    /// A client is being closed for what it made the daemon hold (ClientHandler).
    func clientOverLimit(_ session: ClientSession, reason: ClientLimitError) {
        loop.assertInEventLoop()
        closedClients += 1
        clientLog.log(.warning, cause: "over limit uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                      "closed a client (\(session.who)): \(reason)")
    }

    func replyFailed(_ session: ClientSession, reason: String) {
        loop.assertInEventLoop()
        clientLog.log(.warning, cause: "reply failed", "closed a client (\(session.who)) in the middle of a reply: \(reason)")
    }

    /// After a burst of clients, glibc keeps the freed buffers of their channels in its arenas; a second after
    /// the last client is gone, give those pages back so that the daemon's memory is what it was before the
    /// burst. Not at once: during a connection flood the daemon is empty between most connections, and a
    /// trim each time (it walks the whole heap) made every new client wait (issue 25).
    private func returnFreedMemorySoon() {
        guard memoryTrim == nil else { return }
        memoryTrim = loop.scheduleTask(in: .seconds(1)) { [self] in
            memoryTrim = nil
            if sessions.isEmpty { _ = Self.mallocTrim?(0) }
        }
    }

    /// glibc's `malloc_trim`, looked up at run time: Swift's Glibc module does not import <malloc.h>, and
    /// other C libraries (musl) do not have it.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Tells the engine and the event hop what is being watched now; call after any change of watches.
    func updateMotionDemand() {
        loop.assertInEventLoop()
        engine.setMotionWanted(sessions.values.contains { $0.watched.contains(.motion) })
        let watching = sessions.values.contains { !$0.watched.isEmpty }
        anyoneWatching.withLockedValue { $0 = watching }
    }
}
