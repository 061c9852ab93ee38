import Foundation
import NIOCore
import StepProtocol

/// The server's position requests and events; runs on the server's event loop.
extension ProtocolServer {
    func handleLocation(_ request: Request, from channel: Channel, reply: @escaping (Data) -> Void) throws {
        let loop = channel.eventLoop
        switch request.command {
        case .position:
            reply(Wire.line(LocationWire.position(engine.locationSnapshot.position, now: Date(), id: request.id)))
        case .track:
            let name = try request.string("format") ?? TrackFormat.geojson.rawValue
            guard let format = TrackFormat(rawValue: name.lowercased()) else {
                throw RequestError.badField(name: "format", expected: TrackFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
            }
            engine.exportTrack(format: format) { message in
                var message = message
                message.id = request.id
                loop.execute { reply(Wire.line(message)) }
            }
        case .visits:
            engine.listVisits { visits in
                let message = VisitsMessage(visits: visits.map(LocationWire.visit), id: request.id)
                loop.execute { reply(Wire.line(message)) }
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
}
