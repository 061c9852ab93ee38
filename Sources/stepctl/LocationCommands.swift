import ArgumentParser
import Foundation
import StepProtocol
import Timekeeping

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

/// `--from`/`--to`/`--today`: the saved history instead of the path kept since the daemon started. Times are
/// read as `history` reads them (History.parseSince, History.parseUntil): dates are the daemon's days.
struct StoredRangeOptions: ParsableArguments {
    @Option(help: "Read the saved history from this time: a local date (2026-11-26), 7d (today and 6 days before), 12h, 90m, or an ISO-8601 time. Without --from or --today: the current path (continued across restarts, at most its last 86,400 points).")
    var from: String?

    @Option(help: "The end of the saved range: a local date (through the end of that day) or an ISO-8601 time (default now).")
    var to: String?

    @Flag(help: "Today, from the daemon's local midnight (the saved history).")
    var today = false

    func validate() throws {
        if today, from != nil { throw ValidationError("give --today or --from, not both") }
        if let from { _ = try History.parseSince(from, now: SystemClock().now, option: "--from") }
        if let to { _ = try History.parseUntil(to, option: "--to") }
    }

    /// The request fields; a date, a relative time or --today asks the daemon for its time zone first.
    func fields(_ client: Client) throws -> [String: JSONValue] {
        guard today || from != nil || to != nil else { return [:] }
        let calendar = calendar(in: try daemonTimeZone(client))
        let now = SystemClock().now
        var fields: [String: JSONValue] = [:]
        if today { fields["from"] = .string(Timestamp.string(calendar.startOfDay(for: now), in: calendar.timeZone)) }
        if let from {
            let start = try History.parseSince(from, now: now, calendar: calendar, option: "--from").from
            fields["from"] = .string(Timestamp.string(start, in: calendar.timeZone))
        }
        if let to { fields["to"] = .string(Timestamp.string(try History.parseUntil(to, calendar: calendar, option: "--to"), in: calendar.timeZone)) }
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
        let (track, raw) = try exitOnError { () -> (TrackMessage, Data) in
            let client = try options.connect()
            let request = Request(command: .track, fields: try range.fields(client).merging(["format": .string(format.rawValue)]) { $1 })
            return try client.request(request, expecting: TrackMessage.self)
        }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        if gpx || geojson {
            // The document itself, unchanged, so that it can be redirected to a file.
            Output.write(format == .geojson ? track.document + "\n" : track.document)
            return
        }
        if track.points == 0 {
            let ranged = range.today || range.from != nil || range.to != nil
            return emit(ranged ? "no track in that range" : "no track yet" + (try whyNoTrack().map { ": \($0)" } ?? ""))
        }
        emit("\(number(track.distance_m)) m over \(track.points) points, \(track.start ?? "-") to \(track.end ?? "-")")
    }
}

extension Track {
    /// Why the current path is empty, from STATUS's `gps`: GPS off, no fix yet, or fixes too uncertain for the
    /// path (with the key that admits them). Nil when STATUS says nothing more.
    func whyNoTrack() throws -> String? {
        let status = try exitOnError { try options.connect().request(Request(command: .status), expecting: StatusMessage.self).reply }
        guard let gps = status.gps else { return nil }
        if gps.state == "unavailable", gps.error?.hasPrefix("GPS disabled") == true { return "GPS is off (--no-gps)" }
        if let over = gps.fixes_over_max_eph, over > 0, let limit = gps.track_max_eph_m {
            return "\(over) of \(gps.fixes_accepted) fixes were less certain than track_max_eph_m (eph over \(number(limit, decimals: 0)) m) "
                + "and stay out of the path; to keep them, raise track_max_eph_m in stepd.conf (or --track-max-eph-m)"
        }
        if gps.fixes_accepted == 0 { return "no fix from gpsd yet (gps: \(describe(gps: gps)))" }
        return nil
    }
}

struct Visits: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Places where the walker stayed, oldest first.")
    @OptionGroup var options: ConnectionOptions
    @OptionGroup var range: StoredRangeOptions

    func run() throws {
        let (reply, raw) = try exitOnError {
            let client = try options.connect()
            return try client.request(Request(command: .visits, fields: try range.fields(client)), expecting: VisitsMessage.self)
        }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        if reply.visits.isEmpty { return emit("no visits yet") }
        for visit in reply.visits { emit(describe(visit: visit)) }
    }
}

func describe(position p: PositionMessage) -> String {
    if let since = p.unavailable_since {
        let gone = "GPS unavailable since \(since)" + (p.error.map { ": \($0)" } ?? "")
        return p.lat == nil ? gone : gone + "\nlast fix: " + describe(fix: p)
    }
    return describe(fix: p)
}

private func describe(fix p: PositionMessage) -> String {
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
    // Switched off with --no-gps is a choice, said as the dashboard says it (app.js), not as a failure.
    if g.state == "unavailable", g.error?.hasPrefix("GPS disabled") == true { return "GPS off (--no-gps)" }
    var text = "\(g.state) via gpsd \(g.gpsd), \(g.fixes_accepted) fixes"
    if let age = g.last_fix_age_s { text += ", last \(number(age)) s ago" }
    if let error = g.error {
        // The reason it is unavailable; otherwise an old failure, which must not read as the state's cause.
        text += g.state == "unavailable" ? " (\(error))" : "; last error: \(error)"
    }
    return text
}
