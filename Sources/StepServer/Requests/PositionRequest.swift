import Foundation
import StepProtocol

/// `{"cmd":"position"}`: the last accepted fix, or `mode: "no_fix"` before the first; while gpsd is gone, since
/// when and why as well, so that an old fix does not read as the current one.
extension ProtocolServer {
    func position(_ request: Request) -> PositionMessage {
        let snapshot = engine.locationSnapshot
        var message = LocationWire.position(snapshot.position, now: engine.clock.now, id: request.id)
        if !snapshot.connected, let since = snapshot.unavailableSince {
            message.unavailable_since = Timestamp.string(since)
            message.error = snapshot.error
        }
        return message
    }
}
