import Foundation
import Locking
import NIOCore
import StepProcessing
import StepProtocol
import StepStore

/// `{"cmd":"track","format":"geojson"|"gpx"}`: the path kept in memory since start (continued from the store),
/// or with `from`/`to` the store's saved path in that range. The store's read happens off the event loop and
/// the processing queue; the document is made and written a piece at a time as the client reads it
/// (TrackReply), so a day's 10 MB of GPX is never held whole, whatever the number of clients that ask and do not read.
extension ProtocolServer {
    func track(_ request: Request, loop: EventLoop, reply: @escaping (Reply) -> Void) throws {
        let reply = NIOLoopBound(reply, eventLoop: loop)  // called on the loop only
        let id = request.id
        let name = try request.string("format") ?? TrackFormat.geojson.rawValue
        guard let format = TrackFormat(rawValue: name.lowercased()) else {
            throw RequestError.badField(name: "format", expected: TrackFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
        }
        let budget = replyBudget
        guard let range = try StoredRange(request, now: engine.clock.now) else {
            return engine.trackPath { points, distanceMeters in  // shared with the engine: no copy of its own
                let summary = StoredTrackSummary(points: points.count, start: points.first?.time, end: points.last?.time,
                                                 distanceMeters: distanceMeters)
                let document = TrackReply(points: points, summary: summary, format: format, id: id, holdsOwnData: false,
                                          budget: budget, loop: loop)
                loop.execute { reply.value(.document(document)) }
            }
        }
        let store = try storeForRequest()
        let configuration = engine.configuration.location.track
        // Counted first, then read a page at a time as the client reads the document.
        store.trackSummary(from: range.from, to: range.to, configuration: configuration) { result in
            switch result {
            case .success(let summary):
                let pages = StoredTrackPages(store: store, from: range.from, to: range.to, summary: summary,
                                             configuration: configuration)
                let document = TrackReply(points: pages, summary: summary, format: format, id: id, holdsOwnData: true,
                                          budget: budget, loop: loop)
                loop.execute { reply.value(.document(document)) }
            case .failure(let error):
                let line = Wire.line(ErrorMessage(error, id: id))
                loop.execute { reply.value(.line(line)) }
            }
        }
    }
}

/// A TRACK line made as it is written: the message's fields as Wire encodes them, then the document a piece
/// at a time, escaped as a JSON string, then the rest. Each piece is made on a utility queue while the client
/// reads the one before, so neither the event loop nor the processing queue spends the seconds a day's GPX
/// takes, and the daemon holds a piece and the points it is made from: the path in memory (shared with the
/// engine), or one page of a stored range (StoredTrackPages), never the document or a stored day. No piece is
/// made while the replies of all clients hold the whole ReplyBudget.
final class TrackReply: ReplyPieces, Sendable {
    /// Document text per piece: a few milliseconds of work, few writes for a fast reader.
    static let pieceBytes = 16 * 1024
    /// One queue for every document: on a board's two cores, documents being read fast take one at most, and
    /// the event loop and the processing queue keep the other.
    private static let queue = DispatchQueue(label: "stepd.track-pieces", qos: .utility)
    private let loop: EventLoop
    private let budget: ReplyBudget
    let holdsOwnData: Bool

    /// Where the line is; only on `loop`.
    private struct Progress: Sendable {
        var head: Data?
        var tail: Data?
        /// A piece made and not yet written.
        var made: [UInt8]?
        var making = false
        var finished = false
        /// Why the document could not be finished (its stored range could not be read to the end).
        var failure: String?
        var whenMade: (@Sendable () -> Void)?
    }
    private let progress: NIOLoopBoundBox<Progress>
    /// Taken by the one job making a piece (`making`), and on the loop to drop it once the document is made.
    private let writer: Locked<TrackDocumentWriter?>

    init(points: any TrackPointSource, summary: StoredTrackSummary, format: TrackFormat, id: JSONValue?,
         holdsOwnData: Bool, budget: ReplyBudget, loop: EventLoop) {
        self.loop = loop
        self.budget = budget
        self.holdsOwnData = holdsOwnData
        let distanceMeters = summary.distanceMeters
        let documentFormat: TrackDocumentWriter.Format
        switch format {
        case .geojson: documentFormat = .geoJSON
        case .gpx: documentFormat = .gpx(creator: "stepd")
        }
        let writer = TrackDocumentWriter(format: documentFormat, points: points, distanceMeters: distanceMeters,
                                         time: Timestamp.string)
        // The message with a marker for the document: what comes before the marker is the head, after it the tail.
        var message = TrackMessage(format: format.rawValue, distance_m: (distanceMeters * 10).rounded() / 10,
                                   points: summary.points, start: summary.start.map(Timestamp.string),
                                   end: summary.end.map(Timestamp.string), document: "\u{1}document", id: id)
        let line = Wire.line(message)
        var progress = Progress()
        if let range = line.firstRange(of: Data("\\u0001document".utf8)) {
            progress.head = line[..<range.lowerBound]
            progress.tail = line[range.upperBound...]
            self.writer = Locked(writer)
        } else {
            // Only if the encoder escaped the marker some other way: the line whole rather than a broken one.
            message.document = (try? writer.whole()) ?? ""
            progress.head = Wire.line(message)
            progress.finished = true
            self.writer = Locked(nil)
        }
        // Made off the loop (the store's or the engine's queue), handed to it whole.
        self.progress = .makeBoxSendingValue(progress, eventLoop: loop)
    }

    func next(allocator: ByteBufferAllocator, ready: @escaping @Sendable () -> Void) -> ReplyPiece {
        loop.assertInEventLoop()
        if let head = progress.value.head {
            progress.value.head = nil
            startMaking()
            return .piece(allocator.buffer(bytes: head))
        }
        if let made = progress.value.made {
            progress.value.made = nil
            startMaking()
            return .piece(allocator.buffer(bytes: made))
        }
        if let failure = progress.value.failure { return .failed(failure) }
        if !progress.value.finished {
            progress.value.whenMade = ready
            startMaking()
            return .later
        }
        if let tail = progress.value.tail {
            progress.value.tail = nil
            return .piece(allocator.buffer(bytes: tail))
        }
        return .end
    }

    /// Returns once the pieces being made are made (and hopped onto their loop): at stop, before the loop ends.
    static func waitForPiecesInFlight() {
        queue.sync {}
    }

    /// Makes the next piece on the utility queue, unless one is made or being made, once the budget has room.
    private func startMaking() {
        guard !progress.value.making, !progress.value.finished, progress.value.made == nil else { return }
        progress.value.making = true
        budget.whenRoom { [self] in
            Self.queue.async { [self] in make() }
        }
    }

    private func make() {
        let piece = writer.withLock { writer in Result { try writer?.next(minimumBytes: Self.pieceBytes) } }
            .map { $0.map(Self.escaped) }
        loop.execute { [self] in
            progress.value.making = false
            switch piece {
            case .success(let piece?):
                progress.value.made = piece
            case .success(nil):
                progress.value.finished = true
                writer.withLock { $0 = nil }
            case .failure(let error):
                progress.value.failure = "\(error)"
                progress.value.finished = true
                writer.withLock { $0 = nil }
            }
            let ready = progress.value.whenMade
            progress.value.whenMade = nil
            ready?()
        }
    }

    /// The text as the inside of a JSON string, escaped as Wire's JSONEncoder escapes it (slashes left as they are).
    static func escaped(_ text: String) -> [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + text.utf8.count / 8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        return out
    }
}

/// `from` and `to` (ISO-8601) of `track` and `visits`, when either is given: the saved history in [from, to),
/// `from` defaulting to the start of time and `to` to now.
struct StoredRange {
    var from: Date
    var to: Date

    /// nil when the request names neither: then the answer comes from memory.
    init?(_ request: Request, now: Date) throws {
        let from = try Self.time(request, "from"), to = try Self.time(request, "to")
        guard from != nil || to != nil else { return nil }
        self.from = from ?? Date(timeIntervalSince1970: 0)
        self.to = to ?? now
    }

    private static func time(_ request: Request, _ name: String) throws -> Date? {
        guard let text = try request.string(name) else { return nil }
        guard let date = Timestamp.date(text) else {
            throw RequestError.badField(name: name, expected: "an ISO-8601 time such as \"2026-11-22T08:00:00Z\"")
        }
        return date
    }
}
