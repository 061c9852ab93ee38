import Foundation

/// Encodes a value as compact JSON keeping the order in which its `encode(to:)` writes the keys: a
/// synthesized Codable writes them in declaration order, so every message starts with `class` and follows
/// docs/protocol.md, as gpsd's replies do. (Foundation's JSONEncoder on Linux writes keys in hash order.)
/// Slashes are not escaped; a non-finite number (no JSON for it) is written as null.
public enum OrderedJSONEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        let root = Node()
        try root.store(value, codingPath: [])
        var text = ""
        root.write(to: &text)
        return Data(text.utf8)
    }
}

/// One JSON value being built: written text for a scalar, or an object's keys in order, or an array. The
/// members live in the node (a class) and grow in place: a message is a few dozen nodes, built once.
private final class Node {
    enum Kind { case empty, scalar, object, array }
    var kind = Kind.empty
    var scalar = ""
    var pairs: [(key: String, node: Node)] = []
    var items: [Node] = []

    func set(scalar text: String) {
        kind = .scalar
        scalar = text
    }

    func store<T: Encodable>(_ value: T, codingPath: [CodingKey]) throws {
        switch value {
        case let s as String: set(scalar: Node.quoted(s))
        case let d as Double: set(scalar: Node.number(d))
        case let i as Int: set(scalar: String(i))
        case let b as Bool: set(scalar: b ? "true" : "false")
        case let f as Float: set(scalar: Node.number(Double(f)))
        case let i as any FixedWidthInteger: set(scalar: "\(i)")
        default: try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }

    /// A new member; a key written twice (no synthesized Codable does) is written twice.
    func child(forKey key: String) -> Node {
        kind = .object
        let node = Node()
        pairs.append((key, node))
        return node
    }

    func appended() -> Node {
        kind = .array
        let node = Node()
        items.append(node)
        return node
    }

    func becomeObject() { if kind != .object { kind = .object } }
    func becomeArray() { if kind != .array { kind = .array } }

    func write(to text: inout String) {
        switch kind {
        case .empty: text += "{}"
        case .scalar: text += scalar
        case .object:
            text += "{"
            for (index, pair) in pairs.enumerated() {
                if index > 0 { text += "," }
                text += Node.quoted(pair.key)
                text += ":"
                pair.node.write(to: &text)
            }
            text += "}"
        case .array:
            text += "["
            for (index, node) in items.enumerated() {
                if index > 0 { text += "," }
                node.write(to: &text)
            }
            text += "]"
        }
    }

    /// As JSONEncoder writes numbers: a whole double without a fraction ("600", not "600.0").
    static func number(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }

    static func quoted(_ s: String) -> String {
        // Most strings (keys, timestamps, names) need no escape: copied whole.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + s + "\""
        }
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{8}": out += "\\b"
            case "\u{c}": out += "\\f"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

private struct NodeEncoder: Encoder {
    let node: Node
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedNodeContainer(node: node, codingPath: codingPath))
    }
    func unkeyedContainer() -> UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }
    func singleValueContainer() -> SingleValueEncodingContainer { SingleNodeContainer(node: node, codingPath: codingPath) }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(forKey: key.stringValue).set(scalar: "null") }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.child(forKey: key.stringValue).store(value, codingPath: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = node.child(forKey: key.stringValue)
        child.becomeObject()
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = node.child(forKey: key.stringValue)
        child.becomeArray()
        return UnkeyedNodeContainer(node: child, codingPath: codingPath + [key])
    }
    mutating func superEncoder() -> Encoder { NodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> Encoder {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let node: Node
    var codingPath: [CodingKey]
    var count: Int { node.items.count }

    mutating func encodeNil() throws { node.appended().set(scalar: "null") }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.appended().store(value, codingPath: codingPath) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = node.appended()
        child.becomeObject()
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let child = node.appended()
        child.becomeArray()
        return UnkeyedNodeContainer(node: child, codingPath: codingPath)
    }
    mutating func superEncoder() -> Encoder { NodeEncoder(node: node.appended(), codingPath: codingPath) }
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let node: Node
    var codingPath: [CodingKey]
    mutating func encodeNil() throws { node.set(scalar: "null") }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.store(value, codingPath: codingPath) }
}
