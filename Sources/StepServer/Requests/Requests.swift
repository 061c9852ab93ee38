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
            case .history, .track, .visits: answerWithinBudget(request, from: session, reply: respond)
            case .position: reply(Wire.line(position(request)))
            }
        } catch {
            reply(Wire.line(ErrorMessage(failure: error, id: request.id)))
        }
    }

    /// The requests whose reply can be long start only while the replies of all clients leave room in the
    /// ReplyBudget. History and visits, whose line is made whole, hold `budgetPerRead` of it until their reply is
    /// handed to the connection: so the store's readers never make more at once than the budget, however many
    /// clients ask and do not read. A track document counts its pieces as they are made (TrackReply) instead.
    private func answerWithinBudget(_ request: Request, from session: ClientSession, reply respond: @escaping (Reply) -> Void) {
        let loop = session.channel.eventLoop
        let budget = replyBudget
        let channel = session.channel
        budget.whenRoom { [self] in
            guard channel.isActive else { return }  // closed while it waited: nothing to answer
            let reserved = request.command == .track ? 0 : Self.budgetPerRead
            budget.charge(reserved)
            var released = false
            let reply: (Reply) -> Void = { answer in
                if !released {
                    released = true
                    budget.release(reserved)
                }
                respond(answer)
            }
            do {
                switch request.command {
                case .history: try history(request, loop: loop) { reply(.line($0)) }
                case .track: try track(request, loop: loop, reply: reply)
                case .visits: try visits(request, loop: loop) { reply(.line($0)) }
                default: assertionFailure("not a long reply")
                }
            } catch {
                reply(.line(Wire.line(ErrorMessage(failure: error, id: request.id))))
            }
        }
    }

    /// What one long read may make before its reply is written: the longest history or visits line is about this.
    static let budgetPerRead = 1024 * 1024

    /// The history database, or why there is none.
    func storeForRequest() throws -> StepStore {
        guard let store else { throw StoreError.unavailable(reason: "the daemon runs without a state directory") }
        return store
    }
}
