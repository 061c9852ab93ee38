import Foundation
import NIOCore
import StepEngine
import StepFleet
import StepProcessing
import StepProtocol
import StepStore

/// `{"cmd":"reset"}`: counting starts from zero now; the reply is a fresh STEPS. Only root, the daemon's user and
/// the admin group may (the socket's credentials say who is connected).
extension ProtocolServer {
    func reset(_ request: Request, from session: ClientSession, loop: EventLoop, reply: @escaping (Data) -> Void) throws {
        let reply = NIOLoopBound(reply, eventLoop: loop)  // called on the loop only
        guard session.privileged else {
            clientLog.log(.notice, cause: "refused reset uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                          "refused reset from \(session.who)")
            throw RequestError.notPermitted(command: "reset")
        }
        engine.reset { snapshot in
            loop.execute { reply.value(Wire.line(Replies.steps(snapshot, id: request.id))) }
        }
    }
}
