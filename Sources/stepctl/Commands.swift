import ArgumentParser
import Foundation
import StepProtocol

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The daemon's state: source, detector, rates, uptime.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let reply = try exitOnError { try options.connect().request(["cmd": "status"], expecting: "STATUS") }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        let o = reply.object
        let source = o["source"] as? [String: Any] ?? [:]
        var state = source["state"] as? String ?? "-"
        if let error = source["error"] as? String { state += " (\(error))" }
        emit("stepd \(o["release"] ?? "?"), up \(number(o["uptime_s"], decimals: 0)) s")
        emit("source:   \(source["description"] ?? "-") [\(source["kind"] ?? "-")]: \(state)")
        emit("detector: \(o["detector"] ?? "-")")
        emit("rate:     \(number(o["rate_in_hz"])) Hz in, \(number(o["rate_out_hz"])) Hz out; "
             + "\(o["samples_in"] ?? 0) samples in, \(o["samples_out"] ?? 0) out")
        emit("clients:  \(o["clients"] ?? 0)")
        emit("gps:      \(describe(gps: o["gps"] as? [String: Any]))")
        if let barometer = o["barometer"] as? [String: Any] {
            var state = barometer["state"] as? String ?? "-"
            if let error = barometer["error"] as? String { state += " (\(error))" }
            let name = (barometer["description"] as? String).flatMap { $0.isEmpty ? nil : "\($0) [\(barometer["kind"] ?? "-")]" } ?? "none"
            var line = "barometer: \(name): \(state)"
            if let rate = barometer["rate_hz"] { line += ", \(number(rate)) Hz" }
            if let kpa = barometer["pressure_kpa"] { line += ", \(number(kpa, decimals: 3)) kPa" }
            if let height = o["relative_altitude_m"] { line += ", \(number(height, decimals: 1)) m since start" }
            emit(line)
        }
        if let store = o["store"] as? [String: Any] {
            var state = store["state"] as? String ?? "-"
            if let error = store["error"] as? String { state += " (\(error))" }
            emit("store:    \(store["path"] ?? "-"): \(state), keeps \(store["retention_days"] ?? "-") days")
        }
        if let mqtt = o["mqtt"] as? [String: Any] { emit("mqtt:     \(describe(mqtt: mqtt))") }
    }
}

/// The `mqtt` line of `stepctl status`: the link, and what waits in the outbox.
func describe(mqtt o: [String: Any]) -> String {
    let state = o["state"] as? String ?? "-"
    var text = "\(state) \(state == "disconnected" ? "from" : "to") \(o["broker"] ?? "-") as \(o["topic_prefix"] ?? "-")"
    if let error = o["error"] as? String { text += " (\(error))" }
    text += "; \(o["queued"] ?? 0) queued"
    if let ack = o["last_ack"] as? String { text += ", last acknowledged \(ack)" }
    return text
}

struct Steps: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The step count since the last reset, cadence and distance.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let reply = try exitOnError { try options.connect().request(["cmd": "steps"], expecting: "STEPS") }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        printSteps(reply.object)
    }
}

func printSteps(_ o: [String: Any]) {
    emit("\(o["steps"] ?? 0) steps since \(o["since"] ?? "-") (\(o["activity"] ?? "-"))")
    emit("cadence \(number(o["cadence_spm"], decimals: 0)) steps/min, distance \(number(o["distance_m"])) m "
         + "(stride \(number(o["stride_m"], decimals: 2)) m, detector \(o["detector"] ?? "-"))")
    if let pace = o["average_active_pace_s_per_m"] as? Double { emit(String(format: "average active pace %.2f s/m", pace)) }
    if let up = o["floors_ascended"] as? Int { emit("floors: \(up) up, \(o["floors_descended"] ?? 0) down") }
    if let hardware = o["hardware_steps"] as? Int { emit("sensor's own step counter: \(hardware)") }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start counting from zero.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let reply = try exitOnError { try options.connect().request(["cmd": "reset"], expecting: "STEPS") }
        if options.json { return emit(String(decoding: reply.raw, as: UTF8.self)) }
        printSteps(reply.object)
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print events as they happen until interrupted.")
    @OptionGroup var options: ConnectionOptions

    /// Everything but MOTION, which comes 10 to 60 times a second: `--classes MOTION` or `stepctl graph`.
    static let defaultClasses = ["STEP", "ACTIVITY", "PEDOMETER", "POSITION", "VISIT"]

    @Option(help: "Classes to watch, comma-separated (default: \(Self.defaultClasses.joined(separator: ",")); MOTION only when named).")
    var classes: String?

    func run() throws {
        try exitOnError {
            let client = try options.connect()
            let names = classes.map { $0.split(separator: ",").map { String($0).uppercased() } } ?? Self.defaultClasses
            _ = try client.request(["cmd": "watch", "enable": true, "classes": names], expecting: "WATCH")
            while true {
                let raw = try client.readLine()
                if options.json { emit(String(decoding: raw, as: UTF8.self)); continue }
                guard let o = try? JSONSerialization.jsonObject(with: raw) as? [String: Any] else { continue }
                emit(describe(event: o))
            }
        }
    }
}

/// One readable line for an event; unknown classes are shown as their JSON.
func describe(event o: [String: Any]) -> String {
    let time = o["time"] as? String ?? o["end"] as? String ?? "-"
    switch o["class"] as? String {
    case "STEP": return "\(time)  STEP       step \(o["steps"] ?? 0)"
    case "POSITION": return "\(time)  POSITION   \(describe(position: o))"
    case "VISIT": return "\(o["departure"] as? String ?? o["arrival"] as? String ?? "-")  VISIT      \(describe(visit: o))"
    case "ACTIVITY": return "\(time)  ACTIVITY   \(o["state"] ?? "-")"
    case "PEDOMETER":
        var line = "\(time)  PEDOMETER  \(o["steps"] ?? 0) steps, \(number(o["distance_m"])) m, "
            + "\(number(o["current_cadence_spm"], decimals: 0)) steps/min"
        if let pace = o["current_pace_s_per_m"] as? Double { line += String(format: ", pace %.2f s/m", pace) }
        if let up = o["floors_ascended"] as? Int { line += ", floors +\(up)/-\(o["floors_descended"] ?? 0)" }
        return line
    case "MOTION":
        return "\(time)  MOTION     vertical \(number(o["vertical_accel"], decimals: 2)) m/s², pitch \(number(o["pitch_deg"]))°, "
            + "roll \(number(o["roll_deg"]))°, vibration \(number(o["vibration_rms"], decimals: 3)) m/s²"
    default:
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
