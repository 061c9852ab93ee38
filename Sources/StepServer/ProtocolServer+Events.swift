import Foundation
import NIOCore
import StepEngine
import StepFleet
import StepProcessing
import StepProtocol
import StepStore

/// The engine's events, sent to the clients that watch their class. The daemon registers the server with the
/// engine once it serves (`Engine.register`); each event hops to the server's event loop, and only while someone
/// watches: with nobody watching, the loop is not woken at all, and a quiet daemon stays quiet.
extension ProtocolServer: EngineObserver {
    public func engine(_ engine: Engine, emitted event: EngineEvent) {
        switch event {
        case .reset, .record: return   // the store's
        default: break
        }
        guard anyoneWatching.withLockedValue({ $0 }) else { return }
        loop.execute { self.broadcast(event) }
    }

    func broadcast(_ event: EngineEvent) {
        loop.assertInEventLoop()
        switch event {
        case .step(let count, let time, _):
            send(Wire.line(StepMessage(steps: count, time: Timestamp.string(time))), to: .step)
        case .activity(let state, let time):
            send(Wire.line(ActivityMessage(state: state.rawValue, time: Timestamp.string(time))), to: .activity)
        case .location(let event):
            let (watchClass, data) = wire(event)
            send(data, to: watchClass)
        case .pedometer(let snapshot):
            send(Wire.line(Replies.steps(snapshot, id: nil, asClass: "PEDOMETER")), to: .pedometer)
        case .bout(let bout, let start, let end, let placement):
            send(Wire.line(Replies.bout(bout, start: start, end: end, placement: placement)), to: .bout)
        case .floors, .reset, .record:
            break   // PEDOMETER, which follows, carries the totals; the rest is the store's
        case .motion(let estimate, let time, let sampleTime):
            for session in sessions.values where session.watched.contains(.motion) {
                // Thin the 60 Hz stream to the rate asked for; the small slack keeps 60 Hz exact despite rounding.
                guard sampleTime - session.lastMotionSampleTime >= 1 / session.motionRateHz - 1e-3 else { continue }
                session.lastMotionSampleTime = sampleTime
                if motionCache?.sampleTime != sampleTime {
                    motionCache = (sampleTime, Wire.line(Replies.motion(estimate, time: time)))
                }
                deliver(motionCache!.data, to: session)
            }
        }
    }

    private func send(_ data: Data, to watchClass: WatchClass) {
        for session in sessions.values where session.watched.contains(watchClass) {
            deliver(data, to: session)
        }
    }

    /// Writes an event to a watcher, or drops the watcher if it has left too much unread.
    private func deliver(_ data: Data, to session: ClientSession) {
        let channel = session.channel
        guard channel.isActive else { return }
        let unsent = (try? channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        guard unsent <= configuration.maximumUnsentBytes else {
            droppedWatchers += 1
            clientLog.log(.warning, cause: "dropped watcher uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                          "dropped a watcher (\(session.who)): \(unsent) bytes unread, more than \(configuration.maximumUnsentBytes)")
            session.watched = []
            clientDisconnected(session)
            channel.close(promise: nil)
            return
        }
        var buffer = channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        channel.writeAndFlush(buffer, promise: nil)
    }

    private func wire(_ event: LocationEvent) -> (WatchClass, Data) {
        switch event {
        case .position(let fix): return (.position, Wire.line(LocationWire.position(fix, now: engine.clock.now)))
        case .visit(let visit): return (.visit, Wire.line(LocationWire.visit(visit)))
        }
    }
}
