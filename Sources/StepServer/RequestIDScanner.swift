import Foundation
import StepProtocol

/// Finds the top-level `"id"` of a request that cannot be parsed whole: a line over the length limit (fed
/// piece by piece as it is discarded, so nothing of it is kept) or one that is not valid JSON. The ERROR for
/// it then carries the id, and a client that matches replies on their id is not left waiting (issue 25).
///
/// A lexer, not a parser: it follows strings and nesting, and keeps the text of the value that follows an
/// `"id"` key at depth 1 (any JSON value of at most 256 bytes), which JSONDecoder then reads as the request's
/// parser would.
struct RequestIDScanner {
    static let maximumIDBytes = 256

    /// The id's JSON text, when a whole one was seen (the last one, as JSONDecoder keeps the last duplicate).
    private(set) var idText: [UInt8]?
    private var depth = 0
    private var inString = false
    private var escaped = false
    /// At depth 1, after `{` or `,`: the next string is a key.
    private var expectingKey = false
    private var readingKey = false
    private var key: [UInt8] = []
    /// The key just read was `id`: its value follows the colon.
    private var idKeyRead = false
    private var idValueNext = false
    /// The id's text so far, while it is being read; `valueDepth` is the nesting inside it.
    private var value: [UInt8]?
    private var valueDepth = 0
    private var valueTooLong = false

    init() {}

    /// The id found, as the request's parser would have read it.
    var id: JSONValue? {
        guard let idText else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: Data(idText))
    }

    /// The id of a whole line.
    static func id(in bytes: some Sequence<UInt8>) -> JSONValue? {
        var scanner = RequestIDScanner()
        scanner.scan(bytes)
        scanner.finish()
        return scanner.id
    }

    mutating func scan(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { scan(byte) }
    }

    /// The end of the line: a number at its very end is complete.
    mutating func finish() {
        if value != nil, !inString, valueDepth == 0 { endValue() }
    }

    private mutating func scan(_ byte: UInt8) {
        if value != nil, scanValue(byte) { return }
        if inString { return scanString(byte) }
        switch byte {
        case UInt8(ascii: "\""):
            inString = true
            if idValueNext {
                startValue(byte)
            } else if depth == 1, expectingKey {
                expectingKey = false
                readingKey = true
                key.removeAll(keepingCapacity: true)
            }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if idValueNext {
                startValue(byte)
                valueDepth = 1
            }
            depth += 1
            expectingKey = depth == 1 && byte == UInt8(ascii: "{")
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            depth = max(0, depth - 1)
        case UInt8(ascii: ","):
            if depth == 1 { expectingKey = true }
        case UInt8(ascii: ":"):
            idValueNext = depth == 1 && idKeyRead
            idKeyRead = false
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
            break
        default:
            if idValueNext { startValue(byte) }
        }
    }

    /// A byte of the id's value; false when the byte ends a number or literal and is the lexer's again.
    private mutating func scanValue(_ byte: UInt8) -> Bool {
        let startedAsString = value?.first == UInt8(ascii: "\"")
        if !inString, valueDepth == 0, !startedAsString {
            switch byte {
            case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: " "), UInt8(ascii: "\t"),
                 UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                endValue()
                return false
            default:
                append(byte)
                return true
            }
        }
        append(byte)
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                if valueDepth == 0 { endValue() }
            }
            return true
        }
        switch byte {
        case UInt8(ascii: "\""): inString = true
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            valueDepth += 1
            depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            valueDepth -= 1
            depth -= 1
            if valueDepth == 0 { endValue() }
        default: break
        }
        return true
    }

    /// A byte inside a string that is not the id's value (a key, or another field's value).
    private mutating func scanString(_ byte: UInt8) {
        if readingKey, key.count <= 2 { key.append(byte) }
        if escaped {
            escaped = false
        } else if byte == UInt8(ascii: "\\") {
            escaped = true
        } else if byte == UInt8(ascii: "\"") {
            inString = false
            if readingKey {
                readingKey = false
                idKeyRead = key == Array("id\"".utf8)
            }
        }
    }

    private mutating func startValue(_ byte: UInt8) {
        idValueNext = false
        value = [byte]
        valueDepth = 0
        valueTooLong = false
    }

    private mutating func append(_ byte: UInt8) {
        guard var text = value else { return }
        value = nil  // appended in place, not copied
        if text.count < Self.maximumIDBytes { text.append(byte) } else { valueTooLong = true }
        value = text
    }

    private mutating func endValue() {
        guard let text = value else { return }
        value = nil
        valueDepth = 0
        if !valueTooLong { idText = text }
    }
}
