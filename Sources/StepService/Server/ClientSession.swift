import Foundation
import NIOCore
import StepProtocol

/// One connected client's state, owned by the server's event loop.
final class ClientSession {
    let channel: Channel
    var credentials: PeerCredentials?
    var watched: Set<WatchClass> = []
    var motionRateHz = 10.0
    /// The sample-clock time of the last MOTION sent, to thin 60 Hz down to the rate asked for.
    var lastMotionSampleTime = -Double.infinity

    init(channel: Channel) { self.channel = channel }
}
