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
    }
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
    emit("\(o["steps"] ?? 0) steps since \(o["since"] ?? "-")")
    emit("cadence \(number(o["cadence_spm"], decimals: 0)) steps/min, distance \(number(o["distance_m"])) m "
         + "(detector \(o["detector"] ?? "-"))")
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

    @Option(help: "Classes to watch, comma-separated (default: all).")
    var classes: String?

    func run() throws {
        try exitOnError {
            let client = try options.connect()
            var request: [String: Any] = ["cmd": "watch", "enable": true]
            if let classes { request["classes"] = classes.split(separator: ",").map { String($0).uppercased() } }
            _ = try client.request(request, expecting: "WATCH")
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
    switch o["class"] as? String {
    case "STEP": return "\(o["time"] ?? "-")  step \(o["steps"] ?? 0)"
    case "POSITION": return "position  \(describe(position: o))"
    case "VISIT": return "visit  \(describe(visit: o))"
    default:
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
