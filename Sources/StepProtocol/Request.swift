import Foundation

/// Why a request line could not be served; the text goes to the client in an ERROR.
public enum RequestError: CodedError, Equatable {
    case notJSON
    case notAnObject
    case missingCommand
    case unknownCommand(String)
    case badField(name: String, expected: String)
    case tooLong(limit: Int)
    case notPermitted(command: String)
    case nestedTooDeeply(limit: Int)

    public var code: ErrorCode {
        switch self {
        case .notJSON, .notAnObject, .missingCommand, .badField, .nestedTooDeeply: return .badRequest
        case .unknownCommand: return .unknownCommand
        case .tooLong: return .tooLong
        case .notPermitted: return .notPermitted
        }
    }

    public var description: String {
        switch self {
        case .notJSON: return "request is not valid JSON"
        case .notAnObject: return "request must be a JSON object"
        case .missingCommand: return "request has no \"cmd\" string"
        case .unknownCommand(let c): return "unknown command \"\(c)\"; known: \(Request.Command.allCases.map(\.rawValue).joined(separator: ", "))"
        case .badField(let name, let expected): return "field \"\(name)\" must be \(expected)"
        case .tooLong(let limit): return "request line longer than \(limit) bytes, discarded"
        case .nestedTooDeeply(let limit): return "request nests arrays or objects more than \(limit) deep"
        case .notPermitted(let command):
            return "\"\(command)\" is not permitted: only root, the daemon's user or its admin group may do it"
        }
    }
}

/// A request line that could not be parsed, with the `id` it carried when it had one.
public struct RequestFailure: CodedError, Equatable {
    public let reason: RequestError
    public let id: JSONValue?
    public init(_ reason: RequestError, id: JSONValue? = nil) {
        self.reason = reason
        self.id = id
    }
    public var description: String { reason.description }
    public var code: ErrorCode { reason.code }
}

/// One request line: `{"cmd": "...", "id": any, ...}`.
public struct Request: Sendable {
    public enum Command: String, CaseIterable, Sendable {
        case status, steps, reset, watch, history
        case position, track, visits  // Location: see LocationMessages.swift
    }

    public let command: Command
    /// Echoed in the reply so that a client can match replies to requests.
    public let id: JSONValue?
    public let fields: [String: JSONValue]

    public init(command: Command, id: JSONValue? = nil, fields: [String: JSONValue] = [:]) {
        self.command = command
        self.id = id
        self.fields = fields
    }

    /// No request needs more; a deeper one is refused before parsing, so that it cannot exhaust the stack.
    public static let maximumNesting = 16

    /// Parses one line; a line that is an object but not a request we know throws a `RequestFailure` that
    /// still carries its `id`, so that the ERROR can be matched to the request.
    public static func parse(_ line: Data) throws(RequestFailure) -> Request {
        guard nestingDepth(line) <= maximumNesting else { throw RequestFailure(.nestedTooDeeply(limit: maximumNesting)) }
        let value: JSONValue
        do { value = try JSONDecoder().decode(JSONValue.self, from: line) } catch { throw RequestFailure(.notJSON) }
        guard case .object(let object) = value else { throw RequestFailure(.notAnObject) }
        let id = object["id"]
        guard let name = object["cmd"]?.stringValue else { throw RequestFailure(.missingCommand, id: id) }
        guard let command = Command(rawValue: name) else { throw RequestFailure(.unknownCommand(name), id: id) }
        return Request(command: command, id: id, fields: object)
    }

    /// The deepest nesting of brackets and braces outside strings.
    static func nestingDepth(_ bytes: Data) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1; deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    public func bool(_ name: String) throws -> Bool? {
        guard let v = fields[name], v != .null else { return nil }
        guard let b = v.boolValue else { throw RequestError.badField(name: name, expected: "true or false") }
        return b
    }

    public func strings(_ name: String) throws -> [String]? {
        guard let v = fields[name], v != .null else { return nil }
        guard let items = v.arrayValue else { throw RequestError.badField(name: name, expected: "an array of strings") }
        return try items.map {
            guard let s = $0.stringValue else { throw RequestError.badField(name: name, expected: "an array of strings") }
            return s
        }
    }

    public func string(_ name: String) throws -> String? {
        guard let v = fields[name], v != .null else { return nil }
        guard let s = v.stringValue else { throw RequestError.badField(name: name, expected: "a string") }
        return s
    }

    public func number(_ name: String) throws -> Double? {
        guard let v = fields[name], v != .null else { return nil }
        guard let n = v.doubleValue, n.isFinite else { throw RequestError.badField(name: name, expected: "a number") }
        return n
    }
}
