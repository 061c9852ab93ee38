import Foundation
import NIOCore
import StepProtocol

/// `{"cmd":"visits"}`: the stays kept since start (continued from the store), oldest first, or with `from`/`to`
/// the store's saved stays in that range (StoredRange, TrackRequest.swift).
extension ProtocolServer {
    func visits(_ request: Request, loop: EventLoop, reply: @escaping (Data) -> Void) throws {
        let reply = NIOLoopBound(reply, eventLoop: loop)  // called on the loop only
        let id = request.id
        guard let range = try StoredRange(request, now: engine.clock.now) else {
            return engine.listVisits { visits in
                let message = VisitsMessage(visits: visits.map(LocationWire.visit), id: id)
                loop.execute { reply.value(Wire.line(message)) }
            }
        }
        try storeForRequest().visits(from: range.from, to: range.to) { result in
            let line: Data
            switch result {
            case .success(let visits): line = Wire.line(VisitsMessage(visits: visits.map { LocationWire.visit($0.visit) }, id: id))
            case .failure(let error): line = Wire.line(ErrorMessage(error, id: id))
            }
            loop.execute { reply.value(line) }
        }
    }
}
