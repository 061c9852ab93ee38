import Foundation
import Glibc
import StepProtocol

/// Why the configuration file cannot be used. Each sentence names the file, the line and the key, so the
/// journal says exactly what to fix; stepd then exits with EX_NOINPUT (66) for a file it cannot read and
/// EX_CONFIG (78) for one whose content is wrong, neither of which the unit restarts on.
public enum ConfigError: Error, Equatable, CustomStringConvertible {
    case cannotRead(file: String, reason: String)
    case notKeyValue(file: String, line: Int, text: String)
    case unknownKey(file: String, line: Int, key: String, known: [String])
    case badValue(file: String, line: Int, key: String, value: String, expected: String)
    case duplicateKey(file: String, line: Int, key: String, firstLine: Int)

    public var description: String {
        let quoted = ConfigError.quoted
        switch self {
        case .cannotRead(let file, let reason):
            return "\(file): cannot read the configuration: \(reason)"
        case .notKeyValue(let file, let line, let text):
            return "\(file):\(line): expected \"key = value\" or a # comment, found \(quoted(text))"
        case .unknownKey(let file, let line, let key, let known):
            if let near = ConfigError.nearest(to: key, in: known) {
                return "\(file):\(line): unknown key \(quoted(key)); did you mean \"\(near)\"?"
            }
            return "\(file):\(line): unknown key \(quoted(key)); known keys: \(known.joined(separator: ", "))"
        case .badValue(let file, let line, let key, let value, let expected):
            return "\(file):\(line): key \"\(key)\": expected \(expected), found \(quoted(value))"
        case .duplicateKey(let file, let line, let key, let first):
            return "\(file):\(line): key \"\(key)\" is already set on line \(first)"
        }
    }

    /// The known key a mistyped one most likely meant, as the command line's "Did you mean" does: the flag's
    /// spelling (`max-clients`), a letter or two off (`retenion_days`), or the start of one (`retention`).
    /// Nil when none is near: a guess that is far off would mislead more than the list of keys.
    public static func nearest(to key: String, in known: [String]) -> String? {
        let typed = key.lowercased().replacingOccurrences(of: "-", with: "_")
        guard typed.count <= 64 else { return nil }
        return CommandSuggestion.nearest(to: typed, in: known, prefixFrom: 4)
    }

    /// A value as a message shows it, in double quotes: control characters escaped (`\r`, `\t`, `\u{1B}`), so
    /// that a stray carriage return or escape neither hides nor rewrites the line on a terminal or in the
    /// journal, and cut to its first 80 characters with its length after, so that a 1 MB value gives a line.
    public static func quoted(_ text: String) -> String {
        var result = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == 80 { return result + "…\" (\(text.utf8.count) bytes)" }
            count += 1
            switch scalar {
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            default:
                result += scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                    ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
            }
        }
        return result + "\""
    }

    /// A file that cannot be read is EX_NOINPUT; a file read but wrong is EX_CONFIG.
    public var exitStatus: ExitStatus {
        if case .cannotRead = self { return .noInput }
        return .config
    }
}

/// A typed configuration value.
public enum ConfigValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case number(Double)
    case flag(Bool)
}

/// stepd.conf: one `key = value` per line; `#` starts a comment line, and `#` after a space a comment at the
/// end of a line; blank lines are ignored; a value may be written in double quotes to keep leading or trailing
/// spaces or a ` #`. Keys are those of `ConfigOption.all`, each
/// value is checked against its option's kind when the file is read.
public struct ConfigFile: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var value: ConfigValue
        public var line: Int
    }

    public let path: String
    public private(set) var entries: [String: Entry] = [:]

    /// An empty configuration: every option at its default.
    public init(path: String) { self.path = path }

    /// Reads the file. A missing file is an error only when `required` (given with --config); the default
    /// /etc/stepd/stepd.conf may be absent.
    public static func load(path: String, required: Bool, options: [ConfigOption] = ConfigOption.all) throws -> ConfigFile {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw ConfigError.cannotRead(file: path, reason: "no such file") }
            return ConfigFile(path: path)
        }
        let data = try read(path)
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError.cannotRead(file: path, reason: "not UTF-8 text")
        }
        return try parse(text, path: path, options: options)
    }

    /// The file's bytes, or the reason in the words of strerror(3) ("Is a directory", "Permission denied"):
    /// Foundation's own errors would print an NSCocoaErrorDomain code. A FIFO or a device is refused before a
    /// read could wait for ever (StartupFile).
    static func read(_ path: String) throws -> Data {
        let descriptor: CInt
        switch StartupFile.openForReading(path: path) {
        case .success(let opened): descriptor = opened
        case .failure(let refused):
            throw ConfigError.cannotRead(file: path, reason: refused.errno != 0 ? lowercasedError(refused.errno) : refused.reason)
        }
        defer { close(descriptor) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = Glibc.read(descriptor, &chunk, chunk.count)
            if n == 0 { return data }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigError.cannotRead(file: path, reason: lowercasedError(errno))
            }
            data.append(contentsOf: chunk[0..<n])
            // A configuration is a few KiB; a path to a device or a huge file is a mistake, not a config.
            if data.count > 1 << 20 { throw ConfigError.cannotRead(file: path, reason: "larger than 1 MiB") }
        }
    }

    private static func lowercasedError(_ number: Int32) -> String {
        let text = String(cString: strerror(number))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    public static func parse(_ text: String, path: String, options: [ConfigOption] = ConfigOption.all) throws -> ConfigFile {
        var file = ConfigFile(path: path)
        let byKey = Dictionary(uniqueKeysWithValues: options.map { ($0.key, $0) })
        // Split on the byte \n: a String splits on Characters, and "\r\n" is one Character, so a file written
        // with CRLF line ends (Windows, some editors) would be one long line. The \r goes with the trimming.
        for (index, rawLine) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = String(decoding: rawLine, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigError.notKeyValue(file: path, line: number, text: line)
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else { throw ConfigError.notKeyValue(file: path, line: number, text: line) }
            guard let option = byKey[key] else {
                throw ConfigError.unknownKey(file: path, line: number, key: key, known: options.map(\.key))
            }
            if let first = file.entries[key] {
                throw ConfigError.duplicateKey(file: path, line: number, key: key, firstLine: first.line)
            }
            value = Self.withoutComment(value)
            guard let typed = option.kind.parse(value) else {
                throw ConfigError.badValue(file: path, line: number, key: key, value: value,
                                           expected: option.kind.expectation(for: value))
            }
            file.entries[key] = Entry(value: typed, line: number)
        }
        return file
    }

    /// A value without the comment after it and without its quotes. `#` after a space or tab starts a comment
    /// (`gpsd = 127.0.0.1:2947 # the box's receiver`), as in most ini readers; a `#` inside a word stays
    /// (`password = ab#cd`), and a value written in double quotes keeps everything between them.
    static func withoutComment(_ text: String) -> String {
        if text.hasPrefix("\""), let close = text.dropFirst().firstIndex(of: "\"") {
            let rest = text[text.index(after: close)...].trimmingCharacters(in: .whitespaces)
            if rest.isEmpty || rest.hasPrefix("#") { return String(text[text.index(after: text.startIndex)..<close]) }
        }
        var value = text
        var previous: Character = " "
        for index in text.indices {
            if text[index] == "#", previous == " " || previous == "\t" {
                value = text[..<index].trimmingCharacters(in: .whitespaces)
                break
            }
            previous = text[index]
        }
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        return value
    }

    public func string(_ key: String) -> String? {
        if case .string(let s)? = entries[key]?.value { return s }
        return nil
    }

    public func integer(_ key: String) -> Int? {
        if case .integer(let n)? = entries[key]?.value { return n }
        return nil
    }

    public func number(_ key: String) -> Double? {
        switch entries[key]?.value {
        case .number(let n)?: return n
        case .integer(let n)?: return Double(n)
        default: return nil
        }
    }

    public func flag(_ key: String) -> Bool? {
        if case .flag(let b)? = entries[key]?.value { return b }
        return nil
    }
}
