import StepProcessing

/// Random and mutated request lines for the protocol's fuzz tests, from a seed (SplitMix), so that a failing
/// run can be repeated: well-formed requests, the same with bytes changed, inserted, removed or cut, JSON
/// fragments (deep nesting, huge numbers, lone surrogates), raw bytes and lines near and over the length limit.
/// None contains a newline; each is one line of the protocol.
public enum HostileRequestLines {
    public static let seeds: [String] = [
        #"{"cmd":"status"}"#, #"{"cmd":"steps","id":1}"#, #"{"cmd":"reset","id":"x"}"#,
        #"{"cmd":"watch","enable":true,"classes":["STEP","MOTION"],"rate_hz":30}"#,
        #"{"cmd":"watch","enable":false}"#, #"{"cmd":"position"}"#, #"{"cmd":"track","format":"gpx"}"#,
        #"{"cmd":"history","from":"2026-01-01T00:00:00Z","to":"2026-12-31T00:00:00Z","bin":"day"}"#,
        #"{"cmd":"visits","id":[1,{"a":null}]}"#,
    ]

    static let fragments: [String] = [
        "{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e999", "-0", "\\u0000", "\\ud800", "é", "💥",
        "\"cmd\"", "\"watch\"", "\"classes\"", "\"rate_hz\"", "NaN", "0x10", "\t", "\\", "9999999999999999999999",
    ]

    /// One line: a tenth raw bytes, a tenth deep nesting, a tenth over 4 KiB, a tenth a well-formed request, the
    /// rest a mutated request.
    public static func next(_ g: inout SplitMix) -> String {
        switch g.next() % 10 {
        case 0: return String(decoding: (0..<Int(g.next() % 200)).map { _ in UInt8(truncatingIfNeeded: g.next()) }.filter { $0 != 0x0A }, as: UTF8.self)
        case 1: return String(repeating: "[", count: Int(g.next() % 3000))
        case 2: return String(repeating: "x", count: 4000 + Int(g.next() % 8000))
        case 3: return pick(seeds, &g)
        default: return mutate(pick(seeds, &g), &g)
        }
    }

    /// `line` with one to four random edits.
    public static func mutate(_ line: String, _ g: inout SplitMix) -> String {
        var bytes = Array(line.utf8)
        for _ in 0..<(1 + Int(g.next() % 4)) {
            switch g.next() % 6 {
            case 0 where !bytes.isEmpty: bytes[Int(g.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: g.next())
            case 1: bytes.insert(contentsOf: Array(pick(fragments, &g).utf8), at: Int(g.next() % UInt64(bytes.count + 1)))
            case 2 where !bytes.isEmpty: bytes.remove(at: Int(g.next() % UInt64(bytes.count)))
            case 3 where !bytes.isEmpty: bytes = Array(bytes.prefix(Int(g.next() % UInt64(bytes.count))))
            case 4: bytes += Array(pick(seeds, &g).utf8)
            default: bytes.append(UInt8(truncatingIfNeeded: g.next()))
            }
        }
        return String(decoding: bytes.filter { $0 != 0x0A }, as: UTF8.self)
    }

    private static func pick(_ strings: [String], _ g: inout SplitMix) -> String {
        strings[Int(g.next() % UInt64(strings.count))]
    }
}
