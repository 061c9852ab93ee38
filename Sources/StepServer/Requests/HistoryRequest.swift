import Foundation
import NIOCore
import StepEngine
import StepProtocol
import StepStore

/// `{"cmd":"history","from":ISO-8601,"to":ISO-8601,"bin":"minute"|"hour"|"day"}`: the store answers on its own
/// queue and the reply hops back to the client's event loop. Without `from`, the range starts at local
/// midnight today; without `to`, it ends now; the bin defaults to hour. `"bouts":true` adds the walking bouts that
/// start in the range, read after the bins.
extension ProtocolServer {
    func history(_ request: Request, loop: EventLoop, reply: @escaping (Data) -> Void) throws {
        let reply = NIOLoopBound(reply, eventLoop: loop)  // called on the loop only
        let store = try storeForRequest()
        let zone = DaemonTimeZone.current.zone
        let now = engine.clock.now
        let to = try Self.date(request, "to") ?? now
        let from = try Self.date(request, "from") ?? zone.startOfDay(for: now)
        let size: HistoryBinSize
        if let name = request.fields["bin"], name != .null {
            guard let text = name.stringValue, let parsed = HistoryBinSize(rawValue: text) else {
                throw RequestError.badField(name: "bin", expected: "one of \"minute\", \"hour\", \"day\"")
            }
            size = parsed
        } else {
            size = .hour
        }
        let withBouts: Bool
        switch request.fields["bouts"] {
        case nil, .null?: withBouts = false
        case .bool(let wanted)?: withBouts = wanted
        default: throw RequestError.badField(name: "bouts", expected: "true or false")
        }
        let id = request.id
        store.history(from: from, to: to, size: size, zone: zone) { result in
            guard withBouts, case .success(let bins) = result else { return answer(result, bouts: nil) }
            store.bouts(from: from, to: to) { boutsResult in
                switch boutsResult {
                case .success(let bouts): answer(.success(bins), bouts: bouts)
                case .failure(let error): answer(.failure(error), bouts: nil)
                }
            }
        }

        @Sendable func answer(_ result: Result<[HistoryBin], StoreError>, bouts: [StoredBout]?) {
            let line: Data
            switch result {
            case .success(let bins):
                let format = LocalTimestamps(zone: zone)
                let messages = bins.map {
                    HistoryBinMessage(start: format.string($0.start), end: format.string($0.end),
                                      date: size == .day ? format.day($0.start) : nil,
                                      steps: $0.steps, distance_m: ($0.distanceMeters * 1000).rounded() / 1000,
                                      floors: $0.floors)
                }
                let boutMessages = bouts?.map { bout in
                    BoutMessage(start: format.string(bout.start), end: format.string(bout.end), steps: bout.steps,
                                duration_s: (bout.end.timeIntervalSince(bout.start) * 1000).rounded() / 1000,
                                cadence_spm: bout.cadenceStepsPerMinute, stride_time_s: bout.gait.strideTimeSeconds,
                                stride_time_cv: bout.gait.strideTimeCV, regularity: bout.gait.regularity,
                                symmetry: bout.gait.symmetry, step_length_m: bout.gait.stepLengthMeters,
                                speed_mps: bout.gait.speedMetersPerSecond, placement: bout.placement)
                }
                line = Wire.line(HistoryMessage(from: Timestamp.string(from, in: zone),
                                                to: Timestamp.string(to, in: zone), bin: size.rawValue,
                                                time_zone: zone.identifier, bins: messages, bouts: boutMessages, id: id))
            case .failure(let error):
                line = Wire.line(ErrorMessage(error, id: id))
            }
            loop.execute { reply.value(line) }
        }
    }

    private static func date(_ request: Request, _ name: String) throws -> Date? {
        guard let value = request.fields[name], value != .null else { return nil }
        guard let text = value.stringValue, let date = Timestamp.date(text) else {
            throw RequestError.badField(name: name, expected: "an ISO-8601 time such as \"2026-11-22T08:00:00Z\"")
        }
        return date
    }
}
