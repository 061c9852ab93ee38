import ArgumentParser
import Foundation
import StepProtocol
import Timekeeping

/// The seed's shareable line: "I walked N steps today".
struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One line to share: the steps walked today and how far.")
    @OptionGroup var options: ConnectionOptions

    /// Written as a daemon's message: `class` first, then the fields in this order.
    struct Result: Encodable {
        var `class` = "SUMMARY"
        var steps: Int
        var distance_m: Double
        /// Floors climbed, when a barometer counts them.
        var floors: Int?
        var since: String
        var text: String
    }

    func run() throws {
        let client = try exitOnError { try options.connect() }
        let result = try exitOnError { try today(client) }
        if options.json {
            emit(String(decoding: try OrderedJSONEncoder.encode(result), as: UTF8.self))
        } else {
            emit(result.text)
        }
    }

    /// Today's steps from the daemon's day history when it keeps one, else its count since the last reset.
    /// "Today" is the daemon's day (its time zone, from STATUS), which its history bins by.
    private func today(_ client: Client) throws -> Result {
        let zone = try daemonTimeZone(client)
        let midnight = calendar(in: zone).startOfDay(for: SystemClock().now)
        let now = SystemClock().now
        let historyRequest = Request(command: .history, fields: [
            "bin": .string("day"), "from": .string(Timestamp.string(midnight, in: zone)), "to": .string(Timestamp.string(now, in: zone)),
        ])
        if let history = try? client.request(historyRequest, expecting: HistoryMessage.self).reply {
            let steps = history.bins.reduce(0) { $0 + $1.steps }
            let distance = history.bins.reduce(0.0) { $0 + $1.distance_m }
            return Result(steps: steps, distance_m: distance, floors: history.floors, since: Timestamp.string(midnight, in: zone),
                          text: Self.sentence(steps: steps, meters: distance, floors: history.floors, period: "today"))
        }
        let counted = try client.request(Request(command: .steps), expecting: StepsMessage.self).reply
        let sinceDate = Timestamp.date(counted.since) ?? SystemClock().now
        let period = sinceDate >= midnight ? "today" : "since \(Timestamp.day(sinceDate, in: zone))"
        return Result(steps: counted.steps, distance_m: counted.distance_m, floors: counted.floors_ascended, since: counted.since,
                      text: Self.sentence(steps: counted.steps, meters: counted.distance_m, floors: counted.floors_ascended, period: period))
    }

    static func sentence(steps: Int, meters: Double, floors: Int? = nil, period: String) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        let count = formatter.string(from: NSNumber(value: steps)) ?? "\(steps)"
        let distance = meters >= 1000 ? String(format: "%.2f km", meters / 1000) : String(format: "%.0f m", meters)
        let climbed = floors.map { " and climbed \($0) floor\($0 == 1 ? "" : "s")" } ?? ""
        return "I walked \(count) step\(steps == 1 ? "" : "s") \(period) (\(distance))\(climbed)."
    }
}
