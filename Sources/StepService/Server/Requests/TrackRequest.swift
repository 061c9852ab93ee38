import Foundation
import NIOCore
import StepProcessing
import StepProtocol

/// `{"cmd":"track","format":"geojson"|"gpx"}`: the path kept in memory since start (continued from the store),
/// or with `from`/`to` the store's saved path in that range. Either way the work happens off the event loop and
/// the processing queue.
extension ProtocolServer {
    func track(_ request: Request, loop: EventLoop, reply: @escaping (Data) -> Void) throws {
        let id = request.id
        let name = try request.string("format") ?? TrackFormat.geojson.rawValue
        guard let format = TrackFormat(rawValue: name.lowercased()) else {
            throw RequestError.badField(name: "format", expected: TrackFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
        }
        let send: @Sendable (TrackMessage) -> Void = { message in
            var message = message
            message.id = id
            let line = Wire.line(message)
            loop.execute { reply(line) }
        }
        guard let range = try StoredRange(request) else { return engine.exportTrack(format: format, completion: send) }
        let store = try storeForRequest()
        let configuration = engine.configuration.location.track
        store.trackPoints(from: range.from, to: range.to) { result in
            switch result {
            case .success(let stored):
                let path = StoredPath.track(stored, configuration: configuration)
                send(Engine.trackMessage(points: path.points, distanceMeters: path.distanceMeters, format: format))
            case .failure(let error):
                let line = Wire.line(ErrorMessage(message: error.description, id: id))
                loop.execute { reply(line) }
            }
        }
    }
}

/// `from` and `to` (ISO-8601) of `track` and `visits`, when either is given: the saved history in [from, to),
/// `from` defaulting to the start of time and `to` to now.
struct StoredRange {
    var from: Date
    var to: Date

    /// nil when the request names neither: then the answer comes from memory.
    init?(_ request: Request) throws {
        let from = try Self.time(request, "from"), to = try Self.time(request, "to")
        guard from != nil || to != nil else { return nil }
        self.from = from ?? Date(timeIntervalSince1970: 0)
        self.to = to ?? Date()
    }

    private static func time(_ request: Request, _ name: String) throws -> Date? {
        guard let text = try request.string(name) else { return nil }
        guard let date = Timestamp.date(text) else {
            throw RequestError.badField(name: name, expected: "an ISO-8601 time such as \"2026-11-22T08:00:00Z\"")
        }
        return date
    }
}
