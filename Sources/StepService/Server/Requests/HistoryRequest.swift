import Foundation
import NIOCore
import StepProtocol

/// `{"cmd":"history","from":ISO-8601,"to":ISO-8601,"bin":"minute"|"hour"|"day"}`: the store answers on its own
/// queue and the reply hops back to the client's event loop. Without `from`, the range starts at local
/// midnight today; without `to`, it ends now; the bin defaults to hour.
extension ProtocolServer {
    func history(_ request: Request, loop: EventLoop, reply: @escaping (Data) -> Void) throws {
        let reply = NIOLoopBound(reply, eventLoop: loop)  // called on the loop only
        let store = try storeForRequest()
        let timeZone = DaemonTimeZone.current.zone
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let now = Date()
        let to = try Self.date(request, "to") ?? now
        let from = try Self.date(request, "from") ?? calendar.startOfDay(for: now)
        let size: HistoryBinSize
        if let name = request.fields["bin"], name != .null {
            guard let text = name.stringValue, let parsed = HistoryBinSize(rawValue: text) else {
                throw RequestError.badField(name: "bin", expected: "one of \"minute\", \"hour\", \"day\"")
            }
            size = parsed
        } else {
            size = .hour
        }
        let id = request.id
        store.history(from: from, to: to, size: size, calendar: calendar) { result in
            let line: Data
            switch result {
            case .success(let bins):
                let format = LocalTimestamps(timeZone: timeZone)
                let messages = bins.map {
                    HistoryBinMessage(start: format.string($0.start), end: format.string($0.end),
                                      date: size == .day ? format.day($0.start) : nil,
                                      steps: $0.steps, distance_m: ($0.distanceMeters * 1000).rounded() / 1000,
                                      floors: $0.floors)
                }
                line = Wire.line(HistoryMessage(from: Timestamp.string(from, in: timeZone),
                                                to: Timestamp.string(to, in: timeZone), bin: size.rawValue,
                                                time_zone: timeZone.identifier, bins: messages, id: id))
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
