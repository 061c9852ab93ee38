import StepProtocol

extension EngineSnapshot {
    /// STATUS's `source` object.
    public var sourceStatus: SourceStatus {
        SourceStatus(kind: sourceKind, description: sourceDescription, state: sourceState.name,
                     error: sourceState.reason, samples_rejected: samplesRejected, samples_lost: samplesLost,
                     samples_lost_at: samplesLostAt.map { Timestamp.string($0, in: Engine.daemonZone) }, demo: demo)
    }
}

extension EngineSnapshot {
    /// STATUS's `barometer` object, numbers rounded as docs/protocol.md shows them.
    public var barometerStatus: BarometerStatus {
        let b = barometer
        return BarometerStatus(kind: b.kind, description: b.description, state: b.state.name, error: b.state.reason,
                               rate_hz: b.rateHz.flatMap { $0.isFinite ? Replies.rounded($0, 2) : nil },
                               pressure_kpa: b.lastKilopascal.flatMap { $0.isFinite ? Replies.rounded($0, 4) : nil })
    }
}
