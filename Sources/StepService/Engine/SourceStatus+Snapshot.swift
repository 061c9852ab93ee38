import StepProtocol

extension EngineSnapshot {
    /// STATUS's `source` object.
    public var sourceStatus: SourceStatus {
        SourceStatus(kind: sourceKind, description: sourceDescription, state: sourceState.name,
                     error: sourceState.reason, samples_rejected: samplesRejected, demo: demo)
    }
}
