import ArgumentParser
import Foundation
import StepProtocol

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The daemon's state: source, detector, rates, uptime.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let (status, raw) = try exitOnError { try options.connect().request(Request(command: .status), expecting: StatusMessage.self) }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        let source = status.source
        emit("stepd \(status.release), up \(number(status.uptime_s, decimals: 0)) s")
        emit("source:   \(source.description) [\(source.kind)]: \(withError(source.state, source.error))")
        emit("detector: \(status.detector)")
        if let steps = status.steps { emit("counting: \(describe(counting: steps))") }
        emit("rate:     \(number(status.rate_in_hz)) Hz in, \(number(status.rate_out_hz)) Hz out; "
             + "\(status.samples_in) samples in, \(status.samples_out) out")
        emit("clients:  \(status.clients)")
        emit("gps:      \(describe(gps: status.gps))")
        if let barometer = status.barometer {
            emit(barometerLine(barometer, heightMeters: status.relative_altitude_m))
        }
        if let store = status.store {
            emit("store:    \(store.path): \(withError(store.state, store.error)), keeps \(store.retention_days) days")
        }
        if let mqtt = status.mqtt { emit("mqtt:     \(describe(mqtt: mqtt))") }
    }

    /// The `barometer` line: a sensor and its readings only when there is one. While stepd looks for one
    /// that never came (a board without one), the polling rate it would use is no reading to show.
    private func barometerLine(_ barometer: BarometerStatus, heightMeters: Double?) -> String {
        if barometer.kind == "none" { return "barometer: none (no floors)" }
        if barometer.state == "waiting", barometer.pressure_kpa == nil {
            return "barometer: none found (no floors until one appears; --no-barometer stops the search)"
        }
        let name = barometer.description.isEmpty ? barometer.kind : "\(barometer.description) [\(barometer.kind)]"
        var line = "barometer: \(name): \(withError(barometer.state, barometer.error))"
        if let rate = barometer.rate_hz { line += ", \(number(rate)) Hz" }
        if let kpa = barometer.pressure_kpa { line += ", \(number(kpa, decimals: 3)) kPa" }
        if let height = heightMeters { line += ", \(number(height, decimals: 1)) m since start" }
        return line
    }
}

/// "failed (cannot open ...)": a state and, when it has one, its reason.
func withError(_ state: String, _ error: String?) -> String {
    error.map { "\(state) (\($0))" } ?? state
}

/// Who counts the steps now, in words: the accelerometer's samples through the detector, or the sensor's own
/// counter (`--sensor-step-counter`, while capture is off).
func describe(counting steps: StepCountingStatus) -> String {
    let who = steps.counting == "sensor" ? "the sensor's own step counter" : "the step detector (accelerometer samples)"
    switch steps.sensor_counter {
    case "off": return who
    case "no counter": return who + "; the sensor has no counter of its own (--sensor-step-counter asked for one)"
    default: return who + "; sensor counter \(steps.sensor_counter)"
    }
}

/// A pace as phones and watches show it: minutes and seconds per kilometre ("12:30 min/km").
func pace(secondsPerMeter: Double) -> String {
    guard secondsPerMeter.isFinite, secondsPerMeter > 0 else { return "-" }
    let seconds = Int((secondsPerMeter * 1000).rounded())
    return String(format: "%d:%02d min/km", seconds / 60, seconds % 60)
}

/// The `mqtt` line of `stepctl status`: the link, and what waits in the outbox.
func describe(mqtt: MQTTStatusMessage) -> String {
    var text = "\(mqtt.state) \(mqtt.state == "disconnected" ? "from" : "to") \(mqtt.broker) as \(mqtt.topic_prefix)"
    if let error = mqtt.error { text += " (\(error))" }
    text += "; \(mqtt.queued) queued"
    if let ack = mqtt.last_ack { text += ", last acknowledged \(ack)" }
    return text
}

struct Steps: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Today's steps (since local midnight), then the count since the last reset, cadence and distance.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let (steps, raw) = try exitOnError { try options.connect().request(Request(command: .steps), expecting: StepsMessage.self) }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        printSteps(steps)
    }
}

func printSteps(_ s: StepsMessage) {
    if let today = s.today {
        var line = "today:       \(today.steps) steps, \(number(today.distance_m)) m, \(today.active_min) active min"
        if let up = today.floors_ascended { line += ", floors \(up) up, \(today.floors_descended ?? 0) down" }
        emit(line + " (since \(today.since))")
    }
    emit("\(s.today == nil ? "" : "since reset: ")\(s.steps) steps since \(s.since) (\(s.activity))")
    emit("cadence \(number(s.cadence_spm, decimals: 0)) steps/min, distance \(number(s.distance_m)) m "
         + "(stride \(number(s.stride_m, decimals: 2)) m, detector \(s.detector))")
    if let seconds = s.average_active_pace_s_per_m { emit("average active pace \(pace(secondsPerMeter: seconds))") }
    if let up = s.floors_ascended { emit("floors: \(up) up, \(s.floors_descended ?? 0) down") }
    if let hardware = s.hardware_steps { emit("sensor's own step counter: \(hardware)") }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start counting from zero.")
    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let (steps, raw) = try exitOnError { try options.connect().request(Request(command: .reset), expecting: StepsMessage.self) }
        if options.json { return emit(String(decoding: raw, as: UTF8.self)) }
        printSteps(steps)
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print events as they happen until interrupted.",
        discussion: "When the daemon is not up yet or restarts, watch waits for it and goes on (a note on standard error); --once exits instead (69).")
    @OptionGroup var options: ConnectionOptions

    /// The protocol's default (everything but MOTION, which comes 10 to 60 times a second: `--classes MOTION` or
    /// `stepctl graph`), in the protocol's order.
    static let defaultClasses = WatchClass.allCases.filter(WatchClass.defaultClasses.contains).map(\.rawValue)

    @Option(help: "Classes to watch, comma-separated (default: \(Self.defaultClasses.joined(separator: ",")); MOTION only when named).")
    var classes: String?

    @Flag(help: "Exit (69) when the daemon is not up or closes the connection, instead of waiting for it.")
    var once = false

    func run() throws {
        let names = classes.map { $0.split(separator: ",").map { String($0).uppercased() } } ?? Self.defaultClasses
        let watch = Request(command: .watch, fields: ["enable": .bool(true), "classes": .array(names.map(JSONValue.string))])
        try exitOnError {
            try DaemonFollower(options: options, watch: watch, once: once).run { client in
                while true {
                    let raw = try client.readLine()
                    // An event this stepctl cannot read (a class or fields of a newer daemon) is shown as its JSON.
                    guard !options.json, let event = try? DaemonEvent(line: raw) else {
                        emit(String(decoding: raw, as: UTF8.self))
                        continue
                    }
                    emit(describe(event: event))
                }
            }
        }
    }
}

/// One readable line for an event.
func describe(event: DaemonEvent) -> String {
    switch event {
    case .step(let step): return "\(step.time)  STEP       step \(step.steps)"
    case .position(let position): return "\(position.time ?? "-")  POSITION   \(describe(position: position))"
    case .visit(let visit): return "\(visit.departure ?? visit.arrival)  VISIT      \(describe(visit: visit))"
    case .activity(let activity): return "\(activity.time)  ACTIVITY   \(activity.state)"
    case .pedometer(let s):
        var line = "\(s.end)  PEDOMETER  \(s.steps) steps, \(number(s.distance_m)) m, "
            + "\(number(s.current_cadence_spm, decimals: 0)) steps/min"
        if let seconds = s.current_pace_s_per_m { line += ", pace \(pace(secondsPerMeter: seconds))" }
        if let up = s.floors_ascended { line += ", floors +\(up)/-\(s.floors_descended ?? 0)" }
        return line
    case .bout(let b):
        var line = "\(b.end)  BOUT       \(b.steps) steps in \(number(b.duration_s)) s, \(number(b.cadence_spm)) steps/min"
        if let stride = b.stride_time_s { line += String(format: ", stride %.3f s", stride) }
        if let cv = b.stride_time_cv { line += String(format: " (CV %.1f %%)", cv * 100) }
        if let regularity = b.regularity { line += String(format: ", regularity %.2f", regularity) }
        if let symmetry = b.symmetry { line += String(format: ", symmetry %.2f", symmetry) }
        if let length = b.step_length_m { line += String(format: ", step %.2f m", length) }
        if let speed = b.speed_mps { line += String(format: ", %.2f m/s", speed) }
        return line
    case .motion(let m):
        return "\(m.time)  MOTION     vertical \(number(m.vertical_accel, decimals: 2)) m/s², pitch \(number(m.pitch_deg))°, "
            + "roll \(number(m.roll_deg))°, vibration \(number(m.vibration_rms, decimals: 3)) m/s²"
    }
}
