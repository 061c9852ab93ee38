import Foundation
import StepProtocol
import StepStore

/// Every request and the file that says what it does: `status` in StatusRequest.swift, `steps` in
/// StepsRequest.swift, and so on. Runs on the event loop; a handler reads the engine's published snapshot,
/// never its state, and work that takes long (reset, history, track, visits) runs on another queue and hops
/// back to the client's loop with its reply.
extension ProtocolServer {
    func handle(_ request: Request, from session: ClientSession, reply respond: @escaping (Reply) -> Void) {
        loop.assertInEventLoop()
        let loop = session.channel.eventLoop
        let reply: (Data) -> Void = { respond(.line($0)) }
        do {
            switch request.command {
            case .status: reply(Wire.line(status(request)))
            case .steps: reply(Wire.line(steps(request)))
            case .reset: try reset(request, from: session, loop: loop, reply: reply)
            case .watch: reply(Wire.line(try watch(request, from: session)))
            case .history: try history(request, loop: loop, reply: reply)
            case .position: reply(Wire.line(position(request)))
            case .track: try track(request, loop: loop, reply: respond)
            case .visits: try visits(request, loop: loop, reply: reply)
            }
        } catch {
            reply(Wire.line(ErrorMessage(failure: error, id: request.id)))
        }
    }

    /// The history database, or why there is none.
    func storeForRequest() throws -> StepStore {
        guard let store else { throw StoreError.unavailable(reason: "the daemon runs without a state directory") }
        return store
    }
}
