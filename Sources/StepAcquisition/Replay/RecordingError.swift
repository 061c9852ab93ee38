/// Why a recording could not be read, in words a person can act on. `isMissingInput` tells a file that
/// could not be read at all (EX_NOINPUT, 66) from one whose content is wrong (EX_DATAERR, 65).
public enum RecordingError: Error, CustomStringConvertible, Equatable {
    case missing(path: String)
    case isDirectory(path: String)
    case permissionDenied(path: String)
    /// A FIFO, a device, a socket: refused before a read could wait for ever.
    case notRegularFile(path: String, kind: String)
    case unreadable(path: String, reason: String)
    /// Named `.gz` but not starting with gzip's magic bytes.
    case notGzip(path: String)
    /// gzip data that zlib cannot inflate (corrupt or cut short), found after `afterLine` good lines.
    case corruptGzip(path: String, afterLine: Int, reason: String)
    case badHeader(path: String, found: String)
    /// A byte no text holds (NUL, a control character) near the start: an image, a device's binary export
    /// (.cwa, .gt3x), an executable. `byte` counts from 1, as cmp(1) does.
    case binary(path: String, byte: Int)
    case badLine(path: String, line: Int, text: String)
    /// A row of four numbers whose time is not a number or beyond `RecordingReader.maximumTimeSeconds`.
    case badTime(path: String, line: Int, text: String)
    case lineTooLong(path: String, line: Int, limitBytes: Int)
    /// Read to the end without one `t,x,y,z` row.
    case noSamples(path: String, lines: Int)

    public var isMissingInput: Bool {
        switch self {
        case .missing, .isDirectory, .permissionDenied, .notRegularFile, .unreadable: return true
        default: return false
        }
    }

    /// A gzip stream that ends before its end: a recorder that lost power, a copy that stopped. The rows
    /// before the cut are good.
    public var isCutShort: Bool {
        if case .corruptGzip(_, _, RecordingError.cutShortReason) = self { return true }
        return false
    }

    static let cutShortReason = "it is cut short"

    /// A time of 10^12 to 10^16: Unix time in milliseconds (1.7 * 10^12 in 2026) or microseconds, what many
    /// phone and Arduino loggers write.
    static func looksLikeMilliseconds(_ row: String) -> Bool {
        guard let first = row.split(separator: ",", maxSplits: 1).first,
              let time = Double(first.trimmingCharacters(in: .whitespaces)) else { return false }
        return (1e12..<1e17).contains(abs(time))
    }

    static let millisecondsHint = "; the times look like milliseconds (or microseconds) since 1970: divide the first "
        + "column by 1000 (or 10^6), e.g. awk -F, -v OFS=, '$1+0==$1{$1=sprintf(\"%.3f\",$1/1000)}1' in.csv > out.csv"

    public var description: String {
        switch self {
        case .missing(let path): return "cannot open recording \(path): no such file"
        case .isDirectory(let path): return "cannot open recording \(path): it is a directory, not a file"
        case .permissionDenied(let path): return "cannot open recording \(path): permission denied"
        case .notRegularFile(let path, let kind): return "cannot open recording \(path): it is \(kind), not a regular file"
        case .unreadable(let path, let reason): return "cannot open recording \(path): \(reason)"
        case .notGzip(let path):
            return "\(path): not a gzip file (the name ends in .gz but the content does not start with gzip's magic bytes)"
        case .corruptGzip(let path, let line, let reason):
            return "\(path): not a valid gzip file: \(reason)" + (line > 0 ? ", after line \(line)" : "")
        case .badHeader(let path, let found):
            return "\(path):1: expected a header \(RecordingHeader.documented) or four numbers, found '\(found)'"
        case .binary(let path, let byte):
            return "\(path) is not a text recording (binary data at byte \(byte))"
        case .badLine(let path, let line, let text):
            return "\(path):\(line): expected four numbers t,x,y,z, found '\(text)'"
        case .badTime(let path, let line, let text):
            let range = "\(path):\(line): expected a time t in seconds from -10^12 to 10^12 (31,700 years either side of zero), found '\(text)'"
            return range + (Self.looksLikeMilliseconds(text) ? Self.millisecondsHint : "")
        case .lineTooLong(let path, let line, let limit):
            return "\(path):\(line): a line longer than \(limit / 1024) KiB; expected four numbers t,x,y,z"
        case .noSamples(let path, let lines):
            return "\(path): no samples: \(lines) line\(lines == 1 ? "" : "s") and not one row of four numbers t,x,y,z"
        }
    }
}
