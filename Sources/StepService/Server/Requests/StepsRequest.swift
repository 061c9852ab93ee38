import StepProtocol

/// `{"cmd":"steps"}`: the pedometer since the last reset, from the engine's published snapshot.
extension ProtocolServer {
    func steps(_ request: Request) -> StepsMessage {
        Replies.steps(engine.snapshot, id: request.id)
    }
}
