import ArgumentParser
import Foundation
import StepProtocol

struct Position: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The last GPS fix: time, place, errors, mode, age.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let reply = try exitOnError { try options.connect().request(["cmd": "position"], expecting: "POSITION") }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        emit(describe(position: reply.object))
    }
}

/// `--from`/`--to`: the saved history instead of the path kept since the daemon started.
struct StoredRangeOptions: ParsableArguments {
    @Option(help: "Read the saved history from this time (ISO-8601) instead of the path kept in memory.")
    var from: String?

    @Option(help: "The end of the saved range (ISO-8601; default now).")
    var to: String?

    func validate() throws {
        for (name, value) in [("--from", from), ("--to", to)] {
            if let value, Timestamp.date(value) == nil {
                throw ValidationError("\(name) must be an ISO-8601 time such as 2026-11-22T08:00:00Z, not '\(value)'")
            }
        }
    }

    /// The request fields.
    var fields: [String: Any] {
        var fields: [String: Any] = [:]
        if let from { fields["from"] = from }
        if let to { fields["to"] = to }
        return fields
    }
}

struct Track: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The path walked: its length, or the whole path as GPX or GeoJSON (stepctl track --gpx > walk.gpx).")
    @OptionGroup var options: ConnectionOptions

    @Flag(help: "Print the path as GPX 1.1.")
    var gpx = false

    @Flag(help: "Print the path as a GeoJSON Feature (LineString, lon,lat).")
    var geojson = false

    @OptionGroup var range: StoredRangeOptions

    func validate() throws {
        if gpx && geojson { throw ValidationError("choose one of --gpx and --geojson") }
    }

    func run() throws {
        let format = gpx ? TrackFormat.gpx : .geojson
        let reply = try exitOnError {
            try options.connect().request(range.fields.merging(["cmd": "track", "format": format.rawValue]) { $1 },
                                          expecting: "TRACK")
        }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        let o = reply.object
        if gpx || geojson {
            // The document itself, unchanged, so that it can be redirected to a file.
            FileHandle.standardOutput.write(Data((o["document"] as? String ?? "").utf8))
            if format == .geojson { FileHandle.standardOutput.write(Data("\n".utf8)) }
            return
        }
        emit("\(number(o["distance_m"])) m over \(o["points"] ?? 0) points, \(o["start"] ?? "-") to \(o["end"] ?? "-")")
    }
}

struct Visits: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Places where the walker stayed, oldest first.")
    @OptionGroup var options: ConnectionOptions
    @OptionGroup var range: StoredRangeOptions

    func run() throws {
        let reply = try exitOnError {
            try options.connect().request(range.fields.merging(["cmd": "visits"]) { $1 }, expecting: "VISITS")
        }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        let visits = reply.object["visits"] as? [[String: Any]] ?? []
        if visits.isEmpty { return emit("no visits yet") }
        for v in visits { emit(describe(visit: v)) }
    }
}

func describe(position o: [String: Any]) -> String {
    guard let lat = o["lat"] as? Double, let lon = o["lon"] as? Double else { return "no fix yet" }
    var parts = [String(format: "%.7f, %.7f", lat, lon), "\(o["mode"] ?? "-")"]
    if let eph = o["eph_m"] { parts.append("±\(number(eph)) m (\(o["accuracy"] ?? "-"))") }
    if let alt = o["alt_msl_m"] { parts.append("alt \(number(alt)) m") }
    if let speed = o["speed_mps"] { parts.append("\(number(speed, decimals: 2)) m/s") }
    parts.append("\(o["satellites_used"] ?? 0) sats")
    parts.append("at \(o["time"] ?? "-"), \(number(o["age_s"])) s ago")
    return parts.joined(separator: "  ")
}

func describe(visit o: [String: Any]) -> String {
    let place = String(format: "%.6f, %.6f", o["lat"] as? Double ?? .nan, o["lon"] as? Double ?? .nan)
    let departure = (o["departure"] as? String) ?? "still there"
    return "\(o["arrival"] ?? "-") → \(departure)  at \(place) (±\(number(o["radius_m"])) m, \(o["fixes"] ?? 0) fixes)"
}

/// The `gps` line of `stepctl status`.
func describe(gps o: [String: Any]?) -> String {
    guard let o else { return "-" }
    var text = "\(o["state"] ?? "-") via gpsd \(o["gpsd"] ?? "-"), \(o["fixes_accepted"] ?? 0) fixes"
    if let age = o["last_fix_age_s"] { text += ", last \(number(age)) s ago" }
    if let error = o["error"] as? String, (o["state"] as? String) != "fix" { text += " (\(error))" }
    return text
}
