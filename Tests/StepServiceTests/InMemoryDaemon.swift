import Foundation
import NIOCore
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProtocol
@testable import StepServer
@testable import StepService
@testable import StepStore

/// A small daemon kept in memory, for ClientHandler's tests: a step count that `walk` raises, `steps` and
/// `watch` answered at once, and `reset` and `history` answered later from the event loop's queue, as the real
/// engine and store answer from queues of their own. What it answers is built here from the request; the
/// handler's framing, order and limits are what the tests look at.
final class InMemoryDaemon: ClientResponder {
    var maximumClients = 8
    private(set) var sessions: [ObjectIdentifier: ClientSession] = [:]
    private(set) var requestsHandled: [Request.Command] = []
    private(set) var clientsClosedOverLimit = 0
    private var steps = 0
    private var since = Date(timeIntervalSince1970: 1_790_000_000)

    func walk(steps: Int) { self.steps += steps }

    func clientConnected(_ channel: Channel, credentials: PeerCredentials?) -> Result<ClientSession, ConnectionRefusal> {
        guard sessions.count < maximumClients else { return .failure(.full(limit: maximumClients)) }
        let session = ClientSession(channel: channel, credentials: credentials, privileged: true)
        sessions[ObjectIdentifier(channel)] = session
        return .success(session)
    }

    func clientDisconnected(_ session: ClientSession) {
        sessions[ObjectIdentifier(session.channel)] = nil
    }

    func replyFailed(_ session: ClientSession, reason: String) {}

    func clientOverLimit(_ session: ClientSession, reason: ClientLimitError) {
        clientsClosedOverLimit += 1
    }

    func handle(_ request: Request, from session: ClientSession, reply respond: @escaping (Reply) -> Void) {
        requestsHandled.append(request.command)
        // Handlers run on the channel's loop, which answers later on itself: closures that stay on it need not be Sendable.
        let loop = session.channel.eventLoop.assumeIsolated()
        let reply: (Data) -> Void = { respond(.line($0)) }
        do {
            switch request.command {
            case .steps:
                reply(Wire.line(stepsMessage(id: request.id)))
            case .watch:
                let enable = try request.bool("enable") ?? true
                session.watched = enable ? WatchClass.defaultClasses : []
                reply(Wire.line(WatchMessage(enable: enable, classes: session.watched.map(\.rawValue).sorted(),
                                             rate_hz: nil, id: request.id)))
            case .reset:
                loop.execute { [self] in
                    steps = 0
                    since = since.addingTimeInterval(60)
                    reply(Wire.line(stepsMessage(id: request.id)))
                }
            case .history:
                let text = Timestamp.string(since)
                let bins = [HistoryBinMessage(start: text, end: text, date: nil, steps: steps, distance_m: 0, floors: nil)]
                let message = HistoryMessage(from: text, to: text, bin: "hour", time_zone: "UTC", bins: bins, id: request.id)
                loop.execute { reply(Wire.line(message)) }
            case .track:
                // A line of 8 pieces of 16 KiB, twice the unsent limit, answered later as the engine's path is.
                let pieces = LongLine(id: request.id, pieces: 8)
                loop.execute { respond(.document(pieces)) }
            case .status, .position, .visits:
                throw RequestError.unknownCommand(request.command.rawValue)
            }
        } catch {
            reply(Wire.line(ErrorMessage(failure: error, id: request.id)))
        }
    }

    private func stepsMessage(id: JSONValue?) -> StepsMessage {
        let text = Timestamp.string(since)
        return StepsMessage(steps: steps, since: text, cadence_spm: 0, distance_m: 0, detector: "memory", start: text,
                            end: text, current_pace_s_per_m: nil, average_active_pace_s_per_m: nil, stride_m: 0.7,
                            stride_calibrated: false, activity: "stationary", floors_ascended: nil,
                            floors_descended: nil, id: id)
    }
}

/// A TRACK line of `pieces` pieces of 16 KiB of document, as TrackReply writes a real one.
final class LongLine: ReplyPieces {
    static let pieceBytes = 16 * 1024
    private var parts: [String]
    private(set) var piecesMade = 0
    let holdsOwnData = true

    init(id: JSONValue?, pieces: Int) {
        let idText = id.map { String(decoding: try! JSONEncoder().encode($0), as: UTF8.self) } ?? "null"
        parts = [#"{"class":"TRACK","id":"# + idText + #","document":""#]
            + Array(repeating: String(repeating: "x", count: Self.pieceBytes), count: pieces) + ["\"}\n"]
    }

    /// The whole line, as the client should receive it.
    var line: String { parts.joined() }

    func next(allocator: ByteBufferAllocator, ready: @escaping @Sendable () -> Void) -> ReplyPiece {
        guard piecesMade < parts.count else { return .end }
        defer { piecesMade += 1 }
        return .piece(allocator.buffer(string: parts[piecesMade]))
    }
}
