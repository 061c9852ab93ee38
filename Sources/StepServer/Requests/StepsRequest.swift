import StepEngine
import StepFleet
import StepProcessing
import StepProtocol
import StepStore

/// `{"cmd":"steps"}`: the pedometer since the last reset, from the engine's published snapshot.
extension ProtocolServer {
    func steps(_ request: Request) -> StepsMessage {
        Replies.steps(engine.snapshot, id: request.id)
    }
}
