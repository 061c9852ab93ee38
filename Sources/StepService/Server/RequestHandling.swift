import Foundation
import NIOCore
import StepProtocol

/// What each request does. Runs on the event loop; reads the engine's snapshot, never its state.
extension ProtocolServer {
    func handle(_ request: Request, from session: ClientSession, reply: @escaping (Data) -> Void) {
        do {
            switch request.command {
            case .status:
                reply(Wire.line(status(id: request.id)))
            case .steps:
                reply(Wire.line(Replies.steps(engine.snapshot, id: request.id)))
            case .reset:
                guard session.privileged else {
                    clientLog.log(.notice, cause: "refused reset uid \(session.credentials.map { "\($0.uid)" } ?? "?")",
                                  "refused reset from \(session.who)")
                    throw RequestError.notPermitted(command: "reset")
                }
                let loop = session.channel.eventLoop
                engine.reset { snapshot in
                    loop.execute { reply(Wire.line(Replies.steps(snapshot, id: request.id))) }
                }
            case .watch:
                reply(Wire.line(try watch(request, session: session)))
            case .history:
                try history(request, loop: session.channel.eventLoop, reply: reply)
            case .position, .track, .visits:
                try handleLocation(request, from: session.channel, reply: reply)
            }
        } catch {
            reply(Wire.line(ErrorMessage(message: "\(error)", id: request.id)))
        }
    }

    private func status(id: JSONValue?) -> StatusMessage {
        let s = engine.snapshot
        let gravity = s.motion.map { [Replies.rounded($0.gravity.x, 3), Replies.rounded($0.gravity.y, 3), Replies.rounded($0.gravity.z, 3)] }
        var message = StatusMessage(release: stepdRelease, uptime_s: Replies.rounded(Date().timeIntervalSince(startedAt), 3),
                             source: s.sourceStatus,
                             detector: s.detector, rate_in_hz: Replies.rounded(s.rateInHz, 2), rate_out_hz: s.rateOutHz,
                             samples_in: s.samplesIn, samples_out: s.samplesOut, clients: sessions.count,
                             dropped_watchers: droppedWatchers, gravity: gravity, id: id)
        message.closed_clients = closedClients
        message.store = store.map { storeStatus($0.status) }
        message.gps = gpsStatus()
        message.mqtt = fleet?.status
        message.barometer = s.barometerStatus
        message.relative_altitude_m = s.relativeAltitudeMeters.flatMap { $0.isFinite ? Replies.rounded($0, 2) : nil }
        let zone = TimeZone.current
        message.time_zone = zone.identifier
        message.utc_offset_s = zone.secondsFromGMT(for: Date())
        return message
    }

    private func watch(_ request: Request, session: ClientSession) throws -> WatchMessage {
        let enable = try request.bool("enable") ?? true
        var classes: Set<WatchClass> = []
        if let names = try request.strings("classes") {
            for name in names {
                guard let c = WatchClass(rawValue: name.uppercased()) else {
                    let known = WatchClass.allCases.map(\.rawValue).joined(separator: ", ")
                    throw RequestError.badField(name: "classes", expected: "a list of classes among \(known)")
                }
                classes.insert(c)
            }
        } else {
            classes = WatchClass.defaultClasses
        }
        if let rate = try request.number("rate_hz") {
            guard rate > 0 else { throw RequestError.badField(name: "rate_hz", expected: "a positive number of Hz, at most 60") }
            session.motionRateHz = min(rate, engine.configuration.rateHz)
        }
        if enable {
            session.watched.formUnion(classes)
        } else if request.fields["classes"] == nil {
            session.watched = []
        } else {
            session.watched.subtract(classes)
        }
        updateMotionDemand()
        let current = session.watched.map(\.rawValue).sorted()
        return WatchMessage(enable: !current.isEmpty, classes: current,
                            rate_hz: session.watched.contains(.motion) ? session.motionRateHz : nil, id: request.id)
    }
}
