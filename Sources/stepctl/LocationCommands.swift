import ArgumentParser
import Foundation
import StepProtocol

struct Position: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The last GPS fix: time, place, errors, mode, age.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let (position, raw) = try exitOnError {
            try options.connect().request(Request(command: .position), expecting: PositionMessage.self)
        }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        emit(describe(position: position))
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
    var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        if let from { fields["from"] = .string(from) }
        if let to { fields["to"] = .string(to) }
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
        let request = Request(command: .track, fields: range.fields.merging(["format": .string(format.rawValue)]) { $1 })
        let (track, raw) = try exitOnError { try options.connect().request(request, expecting: TrackMessage.self) }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        if gpx || geojson {
            // The document itself, unchanged, so that it can be redirected to a file.
            FileHandle.standardOutput.write(Data(track.document.utf8))
            if format == .geojson { FileHandle.standardOutput.write(Data("\n".utf8)) }
            return
        }
        emit("\(number(track.distance_m)) m over \(track.points) points, \(track.start ?? "-") to \(track.end ?? "-")")
    }
}

struct Visits: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Places where the walker stayed, oldest first.")
    @OptionGroup var options: ConnectionOptions
    @OptionGroup var range: StoredRangeOptions

    func run() throws {
        let (reply, raw) = try exitOnError {
            try options.connect().request(Request(command: .visits, fields: range.fields), expecting: VisitsMessage.self)
        }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        if reply.visits.isEmpty { return emit("no visits yet") }
        for visit in reply.visits { emit(describe(visit: visit)) }
    }
}

func describe(position p: PositionMessage) -> String {
    guard let lat = p.lat, let lon = p.lon else { return "no fix yet" }
    var parts = [String(format: "%.7f, %.7f", lat, lon), p.mode]
    if let eph = p.eph_m { parts.append("±\(number(eph)) m (\(p.accuracy ?? "-"))") }
    if let alt = p.alt_msl_m { parts.append("alt \(number(alt)) m") }
    if let speed = p.speed_mps { parts.append("\(number(speed, decimals: 2)) m/s") }
    parts.append("\(p.satellites_used ?? 0) sats")
    parts.append("at \(p.time ?? "-"), \(number(p.age_s)) s ago")
    return parts.joined(separator: "  ")
}

func describe(visit v: VisitMessage) -> String {
    let place = String(format: "%.6f, %.6f", v.lat, v.lon)
    return "\(v.arrival) → \(v.departure ?? "still there")  at \(place) (±\(number(v.radius_m)) m, \(v.fixes) fixes)"
}

/// The `gps` line of `stepctl status`.
func describe(gps g: GPSStatus?) -> String {
    guard let g else { return "-" }
    var text = "\(g.state) via gpsd \(g.gpsd), \(g.fixes_accepted) fixes"
    if let age = g.last_fix_age_s { text += ", last \(number(age)) s ago" }
    if let error = g.error {
        // The reason it is unavailable; otherwise an old failure, which must not read as the state's cause.
        text += g.state == "unavailable" ? " (\(error))" : "; last error: \(error)"
    }
    return text
}
