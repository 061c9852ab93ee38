import Foundation
import StepProtocol

/// `{"cmd":"position"}`: the last accepted fix, or `mode: "no_fix"` before the first.
extension ProtocolServer {
    func position(_ request: Request) -> PositionMessage {
        LocationWire.position(engine.locationSnapshot.position, now: engine.clock.now, id: request.id)
    }
}
