import Foundation
import NIOCore
import StepProcessing
import StepProtocol

/// The server's position requests and events; runs on the server's event loop. `track` and `visits` answer
/// from memory (the path and stays kept since start, continued from the store), or with `from`/`to` from the
/// store's saved history; either way the work happens off the event loop and the processing queue.
extension ProtocolServer {
    func handleLocation(_ request: Request, from channel: Channel, reply: @escaping (Data) -> Void) throws {
        let loop = channel.eventLoop
        let id = request.id
        switch request.command {
        case .position:
            reply(Wire.line(LocationWire.position(engine.locationSnapshot.position, now: Date(), id: id)))
        case .track:
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
            if let range = try Self.storedRange(request) {
                let store = try storeForLocation()
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
            } else {
                engine.exportTrack(format: format, completion: send)
            }
        case .visits:
            if let range = try Self.storedRange(request) {
                try storeForLocation().visits(from: range.from, to: range.to) { result in
                    let line: Data
                    switch result {
                    case .success(let visits): line = Wire.line(VisitsMessage(visits: visits.map { LocationWire.visit($0.visit) }, id: id))
                    case .failure(let error): line = Wire.line(ErrorMessage(message: error.description, id: id))
                    }
                    loop.execute { reply(line) }
                }
            } else {
                engine.listVisits { visits in
                    let message = VisitsMessage(visits: visits.map(LocationWire.visit), id: id)
                    loop.execute { reply(Wire.line(message)) }
                }
            }
        default:
            break
        }
    }

    func gpsStatus() -> GPSStatus {
        LocationWire.status(engine.locationSnapshot, now: Date())
    }

    func wire(_ event: LocationEvent) -> (WatchClass, Data) {
        switch event {
        case .position(let fix): return (.position, Wire.line(LocationWire.position(fix, now: Date())))
        case .visit(let visit): return (.visit, Wire.line(LocationWire.visit(visit)))
        }
    }

    private func storeForLocation() throws -> StepStore {
        guard let store else { throw StoreError.unavailable(reason: "the daemon runs without a state directory") }
        return store
    }

    /// `from` and `to` (ISO-8601) when either is given: the saved history in [from, to), `from` defaulting to
    /// the start of time and `to` to now.
    private static func storedRange(_ request: Request) throws -> (from: Date, to: Date)? {
        let from = try time(request, "from"), to = try time(request, "to")
        guard from != nil || to != nil else { return nil }
        return (from ?? Date(timeIntervalSince1970: 0), to ?? Date())
    }

    private static func time(_ request: Request, _ name: String) throws -> Date? {
        guard let text = try request.string(name) else { return nil }
        guard let date = Timestamp.date(text) else {
            throw RequestError.badField(name: name, expected: "an ISO-8601 time such as \"2026-11-22T08:00:00Z\"")
        }
        return date
    }
}
