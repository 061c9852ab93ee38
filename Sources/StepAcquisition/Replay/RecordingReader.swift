import CZlib
import Foundation
import StepProcessing

/// Why a recording could not be read, in words a person can act on.
public enum RecordingError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String)
    case badHeader(path: String, found: String)
    case badLine(path: String, line: Int, text: String)
    case empty(path: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path): return "cannot open recording \(path)"
        case .badHeader(let path, let found): return "\(path): expected a header 't,x,y,z', found '\(found)'"
        case .badLine(let path, let line, let text): return "\(path):\(line): expected four numbers t,x,y,z, found '\(text)'"
        case .empty(let path): return "\(path): no samples"
        }
    }
}

/// Reads a `t,x,y,z` recording (seconds, m/s^2), plain or gzip-compressed; zlib reads both transparently.
public enum RecordingReader {
    public static func read(path: String) throws -> [Sample] {
        guard let file = gzopen(path, "rb") else { throw RecordingError.cannotOpen(path: path) }
        defer { gzclose(file) }
        _ = gzbuffer(file, 1 << 17)
        var samples: [Sample] = []
        var lineNumber = 0
        let capacity: Int32 = 4096
        var buffer = [CChar](repeating: 0, count: Int(capacity))
        while gzgets(file, &buffer, capacity) != nil {
            lineNumber += 1
            let parsed: Sample? = buffer.withUnsafeBufferPointer { parseLine($0.baseAddress!) }
            if let sample = parsed {
                samples.append(sample)
                continue
            }
            let text = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { continue }
            if lineNumber == 1 {
                guard text.replacingOccurrences(of: " ", with: "") == "t,x,y,z" else {
                    throw RecordingError.badHeader(path: path, found: text)
                }
                continue
            }
            throw RecordingError.badLine(path: path, line: lineNumber, text: text)
        }
        guard !samples.isEmpty else { throw RecordingError.empty(path: path) }
        return samples
    }

    /// Parses "t,x,y,z" with strtod, the fast path for millions of lines; nil if the line is not four numbers.
    static func parseLine(_ line: UnsafePointer<CChar>) -> Sample? {
        var values = (0.0, 0.0, 0.0, 0.0)
        var cursor = UnsafeMutablePointer(mutating: line)
        for index in 0..<4 {
            var end: UnsafeMutablePointer<CChar>?
            let value = strtod(cursor, &end)
            guard let stop = end, stop != cursor else { return nil }
            switch index {
            case 0: values.0 = value
            case 1: values.1 = value
            case 2: values.2 = value
            default: values.3 = value
            }
            cursor = stop
            while cursor.pointee == 32 { cursor += 1 }
            if index < 3 {
                guard cursor.pointee == 44 else { return nil }  // ','
                cursor += 1
            }
        }
        while cursor.pointee == 32 || cursor.pointee == 13 { cursor += 1 }
        guard cursor.pointee == 10 || cursor.pointee == 0 else { return nil }
        guard values.0.isFinite, values.1.isFinite, values.2.isFinite, values.3.isFinite else { return nil }
        return Sample(time: values.0, x: values.1, y: values.2, z: values.3)
    }
}
