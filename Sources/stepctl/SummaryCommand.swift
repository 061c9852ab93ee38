import ArgumentParser
import Foundation
import StepProtocol

/// The seed's shareable line: "I walked N steps today".
struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One line to share: the steps walked today and how far.")
    @OptionGroup var options: ConnectionOptions

    struct Result: Encodable {
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
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            emit(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            emit(result.text)
        }
    }

    /// Today's steps from the daemon's day history when it keeps one, else its count since the last reset.
    /// "Today" is the daemon's day (its time zone, from STATUS), which its history bins by.
    private func today(_ client: Client) throws -> Result {
        let zone = try daemonTimeZone(client)
        let midnight = calendar(in: zone).startOfDay(for: Date())
        let now = Date()
        if let history = try? client.request(["cmd": "history", "bin": "day", "from": Timestamp.string(midnight, in: zone),
                                              "to": Timestamp.string(now, in: zone)], expecting: "HISTORY").object,
           let bins = history["bins"] as? [[String: Any]] {
            let steps = bins.reduce(0) { $0 + (($1["steps"] as? Int) ?? 0) }
            let distance = bins.reduce(0.0) { $0 + (($1["distance_m"] as? Double) ?? Double(($1["distance_m"] as? Int) ?? 0)) }
            let floors = history["floors"] as? Int
            return Result(steps: steps, distance_m: distance, floors: floors, since: Timestamp.string(midnight, in: zone),
                          text: Self.sentence(steps: steps, meters: distance, floors: floors, period: "today"))
        }
        let o = try client.request(["cmd": "steps"], expecting: "STEPS").object
        let steps = o["steps"] as? Int ?? 0
        let distance = (o["distance_m"] as? Double) ?? Double((o["distance_m"] as? Int) ?? 0)
        let since = o["since"] as? String ?? ""
        let sinceDate = ISO8601DateFormatter.withFractions.date(from: since) ?? Date()
        let period = sinceDate >= midnight ? "today" : "since \(Timestamp.day(sinceDate, in: zone))"
        let floors = o["floors_ascended"] as? Int
        return Result(steps: steps, distance_m: distance, floors: floors, since: since,
                      text: Self.sentence(steps: steps, meters: distance, floors: floors, period: period))
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

extension ISO8601DateFormatter {
    static let withFractions: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()
}
