import Foundation
import XCTest

/// Every JSON example in README.md and docs/*.md, sent to the real daemon: each documented request gets a
/// reply of the documented class with every field the example shows, and no field that neither an example
/// nor a field table of that class documents. The examples are found by parsing fenced ```json blocks, so
/// a new example is checked without touching this test.
final class DocsExamplesTests: XCTestCase {
    func testEveryDocumentedRequestGetsTheDocumentedReply() throws {
        try GPSDFake.requireTools()
        let examples = try DocumentedExamples.load(from: Binaries.repository)
        XCTAssertGreaterThan(examples.exchanges.count, 8, "the docs' JSON examples were not found")

        let directory = try TemporaryDirectory()
        // A walk, a 90 s stay and a walk out of the visit radius, so that position, track and visits show all.
        let (log, _) = try NMEAWalk.generate(["--hdop", "0.5", "walk:120", "stay:90", "walk:200"], into: directory, name: "docs")
        let port = GPSDFake.freePort()
        // A broker too, so that STATUS shows its `mqtt` object (docs/protocol.md, docs/fleet.md).
        let broker = try MosquittoBroker(directory: directory)
        // The recording with a barometer's file beside it (docs/barometer.md), so STATUS shows its fields.
        let recording = directory.file("walk-inhand.csv.gz")
        try FileManager.default.copyItem(atPath: Binaries.bundledRecording, toPath: recording)
        try ("t,p_kpa\n" + (0...2400).map { String(format: "%.2f,100.8731", Double($0) / 4) }.joined(separator: "\n") + "\n")
            .write(toFile: directory.file("walk-inhand.pressure.csv"), atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--replay", recording, "--speed", "4", "--loop",
                                            "--gpsd", "127.0.0.1:\(port)", "--gps-retry-s", "0.2",
                                            "--visit-min-stay-s", "60", "--mqtt-url", "mqtt://127.0.0.1:\(broker.port)",
                                            "--mqtt-device-id", "docs"], directory: directory)
        // gpsd after the daemon, so that STATUS has a last failure to show (gps.error: "cannot reach gpsd"); the
        // log held back until the daemon's retry has found gpsd (GPSDFake.play(once:)).
        let fake = try GPSDFake(log: log, port: port, cycleSeconds: 0.002, stepped: true, directory: directory)
        defer { fake.stop() }
        try fake.play(once: daemon)
        try daemon.waitUntil(timeout: 90, "steps, a fix and a visit") { status in
            let gps = status["gps"] as? [String: Any] ?? [:]
            return (status["samples_in"] as? Int ?? 0) > 2000 && (gps["fixes_accepted"] as? Int ?? 0) > 200
        }
        try daemon.waitUntil(timeout: 60, "a finished visit") { _ in
            let visits = try daemon.connect().request(["cmd": "visits"])["visits"] as? [[String: Any]] ?? []
            return visits.contains { !($0["departure"] is NSNull) && $0["departure"] != nil }
        }

        for exchange in examples.exchanges {
            try check(exchange, against: daemon, documented: examples)
        }
        for fragment in examples.fragments {
            let client = try daemon.connect()
            let reply = try client.request(["cmd": fragment.command])
            let field = try XCTUnwrap(reply[fragment.field], "\(fragment.place): \(fragment.command) has no \"\(fragment.field)\"")
            compare(field, fragment.object, documented: examples.fields(of: reply["class"] as? String ?? ""),
                    // Under the class, so that a field the fragment leaves out (mqtt.last_ack, present only after a
                    // PUBACK) is found in the section's table as `mqtt.last_ack`.
                    path: "\(reply["class"] as? String ?? "?").\(fragment.field)", place: fragment.place)
        }
    }

    private func check(_ exchange: DocumentedExamples.Exchange, against daemon: Daemon,
                       documented: DocumentedExamples) throws {
        let client = try daemon.connect()
        for step in exchange.steps {
            try client.sendLine(step.requestLine)
            var replies: [String: [String: Any]] = [:]
            let wanted = Set(step.replies.compactMap { $0["class"] as? String })
            let deadline = Date().addingTimeInterval(30)
            while !wanted.isSubset(of: Set(replies.keys)) && Date() < deadline {
                let line = try client.readLine()
                // Numbers come rounded as the examples show them (age_s 0.41, not 0.4109187717437744): a
                // double printed whole has 12 or more digits after the point, a rounded one at most 9 (lat and
                // lon as gpsd gives them, 0.1 mm).
                if let range = line.range(of: #"-?\d+\.\d{10,}"#, options: .regularExpression) {
                    XCTFail("\(exchange.place): \(step.requestLine) brought an unrounded number \(line[range]): \(line)")
                }
                let object = try XCTUnwrap(DocumentedExamples.object(line), "\(exchange.place): not a JSON object: \(line)")
                if let cls = object["class"] as? String, replies[cls] == nil { replies[cls] = object }
            }
            for example in step.replies {
                let cls = example["class"] as? String ?? "?"
                guard let actual = replies[cls] else {
                    XCTFail("\(exchange.place): \(step.requestLine) brought no \(cls) within 30 s; got \(replies.keys.sorted())")
                    continue
                }
                compare(actual, example, documented: documented.fields(of: cls), path: cls, place: exchange.place)
            }
        }
    }

    /// Documented fields present (recursively), and actual fields documented somewhere for the class.
    private func compare(_ actual: Any, _ example: Any, documented: Set<String>, path: String, place: String) {
        if let exampleObject = example as? [String: Any] {
            guard let actualObject = actual as? [String: Any] else {
                return XCTFail("\(place): \(path) is \(actual), documented as an object")
            }
            for (key, value) in exampleObject {
                guard let got = actualObject[key] else {
                    XCTFail("\(place): \(path).\(key) is documented but missing from \(actualObject.keys.sorted())")
                    continue
                }
                if !(value is NSNull) && !(got is NSNull) { compare(got, value, documented: documented, path: "\(path).\(key)", place: place) }
            }
            let prefix = path.split(separator: ".", maxSplits: 1).dropFirst().first.map { "\($0)." } ?? ""
            for key in actualObject.keys where exampleObject[key] == nil {
                let name = prefix + key
                // A table row `store.path` documents the object `store` too.
                let known = documented.contains(name) || documented.contains(key)
                    || documented.contains { $0.hasPrefix(name + ".") || $0.hasPrefix(name + "[].") }
                XCTAssertTrue(known,
                              "\(place): \(path).\(key) is in the reply but documented nowhere for this class")
            }
        } else if let exampleArray = example as? [Any], let first = exampleArray.first {
            guard let actualArray = actual as? [Any] else { return XCTFail("\(place): \(path) is not an array") }
            // An empty history or list shows nothing to compare; the daemon is fed so that most are not.
            if let got = actualArray.first { compare(got, first, documented: documented, path: path + "[]", place: place) }
        }
    }
}

/// The JSON examples of README.md and docs/*.md.
struct DocumentedExamples {
    struct Step {
        var requestLine: String
        var replies: [[String: Any]]
    }

    /// One fenced block: requests, each followed by the replies and events it brings.
    struct Exchange {
        var place: String
        var steps: [Step]
    }

    /// A block that shows one field of a reply (gps.md's `"gps":{...}` of STATUS), under a heading naming the command.
    struct Fragment {
        var place: String
        var command: String
        var field: String
        var object: Any
    }

    var exchanges: [Exchange] = []
    var fragments: [Fragment] = []
    /// Per class, every field an example shows or a field table lists ("source.kind", "bins[].steps").
    var documentedFields: [String: Set<String>] = [:]

    func fields(of cls: String) -> Set<String> { documentedFields[cls] ?? [] }

    static func load(from repository: URL) throws -> DocumentedExamples {
        var result = DocumentedExamples()
        let docs = repository.appendingPathComponent("docs")
        var files = [repository.appendingPathComponent("README.md")]
        files += try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
            .map { docs.appendingPathComponent($0) }
        for file in files {
            try result.read(String(contentsOf: file, encoding: .utf8), name: file.lastPathComponent)
        }
        return result
    }

    private mutating func read(_ text: String, name: String) {
        var heading = ""
        var sectionClasses: Set<String> = []
        var inBlock = false
        var isJSON = false
        var block: [String] = []
        var blockLine = 0
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            if line.hasPrefix("```") {
                if inBlock {
                    if isJSON { sectionClasses.formUnion(readBlock(block, place: "\(name):\(blockLine)", heading: heading)) }
                    block = []
                } else {
                    isJSON = line.dropFirst(3).trimmingCharacters(in: .whitespaces) == "json"
                    blockLine = index + 1
                }
                inBlock.toggle()
                continue
            }
            if inBlock { block.append(line); continue }
            if line.hasPrefix("#") {
                heading = line
                sectionClasses = []
                continue
            }
            // A field table's first column: `name`, `a`, `b` documents fields of the section's classes.
            if line.hasPrefix("| `"), let cell = line.split(separator: "|").first {
                let names = cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"]) }
                for cls in sectionClasses { documentedFields[cls, default: []].formUnion(names) }
            }
        }
    }

    /// Reads one ```json block; returns the classes it shows.
    private mutating func readBlock(_ lines: [String], place: String, heading: String) -> Set<String> {
        var steps: [Step] = []
        var classes: Set<String> = []
        for line in lines where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            if let object = Self.object(line) {
                if object["cmd"] != nil {
                    steps.append(Step(requestLine: line, replies: []))
                } else if let cls = object["class"] as? String {
                    classes.insert(cls)
                    note(object, of: cls, prefix: "")
                    if !steps.isEmpty { steps[steps.count - 1].replies.append(object) }
                }
            } else if let wrapped = Self.object("{" + line + "}"), wrapped.count == 1, let field = wrapped.keys.first,
                      let command = Self.command(in: heading) {
                fragments.append(Fragment(place: place, command: command, field: field, object: wrapped[field]!))
                let cls = command.uppercased()
                classes.insert(cls)
                documentedFields[cls, default: []].insert(field)
                if let inner = wrapped[field] as? [String: Any] { note(inner, of: cls, prefix: field + ".") }
            }
        }
        if !steps.isEmpty { exchanges.append(Exchange(place: place, steps: steps)) }
        return classes
    }

    private mutating func note(_ object: [String: Any], of cls: String, prefix: String) {
        for (key, value) in object {
            documentedFields[cls, default: []].insert(prefix + key)
            documentedFields[cls, default: []].insert(key)
            if let inner = value as? [String: Any] { note(inner, of: cls, prefix: prefix + key + ".") }
            if let first = (value as? [Any])?.first as? [String: Any] { note(first, of: cls, prefix: prefix + key + "[].") }
        }
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// "### `status`" → "status".
    static func command(in heading: String) -> String? {
        guard let open = heading.firstIndex(of: "`") else { return nil }
        let rest = heading[heading.index(after: open)...]
        return rest.firstIndex(of: "`").map { String(rest[..<$0]) }
    }
}
