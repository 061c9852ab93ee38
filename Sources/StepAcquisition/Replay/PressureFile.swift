import CZlib
import Foundation
import Glibc
import StepProcessing
import StepProtocol

/// A barometer's recording beside an accelerometer recording: `walk.csv.gz` → `walk.pressure.csv` or
/// `walk.pressure.csv.gz`, with the header `t,p_kpa` and one row a reading: seconds on the same clock as the
/// recording's `t`, pressure in kPa (the unit of IIO's in_pressure_input). Plain or gzip (zlib reads both).
/// A second file rather than a fifth column because the two sensors run at their own rates (100 Hz and a
/// few Hz): neither is resampled to the other, and a recording without a barometer is unchanged.
public enum PressureFile {
    public static let header = "t,p_kpa"

    /// Where the pressure file of `recording` would be: "walk.csv.gz" → "walk.pressure.csv" then ".csv.gz".
    public static func candidates(besideRecording recording: String) -> [String] {
        var stem = recording
        for suffix in [".gz", ".csv"] where stem.hasSuffix(suffix) { stem.removeLast(suffix.count) }
        return [stem + ".pressure.csv", stem + ".pressure.csv.gz"]
    }

    /// The pressure file beside `recording`, when there is one.
    public static func find(besideRecording recording: String) -> String? {
        candidates(besideRecording: recording).first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Every reading of the file, in time order as written: for a replay, which plays it again each loop.
    public static func read(path: String) throws -> [PressureReading] {
        let reader = try PressureFileReader(path: path)
        var readings: [PressureReading] = []
        while let reading = try reader.next() { readings.append(reading) }
        return readings
    }

    /// A time as a recording's must be (RecordingReader.maximumTimeSeconds): the two files share one clock.
    @inline(__always)
    static func isPlausibleTime(_ t: Double) -> Bool { abs(t) <= RecordingReader.maximumTimeSeconds }

    /// One row's reading; nil for the header on line 1 and blank lines; throws for anything else.
    static func parse(line: Substring, number: Int, path: String) throws -> PressureReading? {
        let row = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if row.isEmpty { return nil }
        let fields = row.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if fields.count == 2, let t = Double(fields[0]), let p = Double(fields[1]), isPlausibleTime(t), p.isFinite {
            return PressureReading(time: t, kilopascal: p)
        }
        if number == 1, row.replacingOccurrences(of: " ", with: "") == header { return nil }
        throw PressureFileError.badLine(path: path, line: number, text: String(row.prefix(80)))
    }
}

/// Reads a pressure file a row at a time, so that `stepd analyze` holds only the readings the floor counter
/// waits on, whatever the file's length (a week at 4 Hz is 2.4 million rows).
///
/// A class: it owns the zlib handle and closes it when it goes.
public final class PressureFileReader {
    public let path: String
    private let file: gzFile
    private var line = 0
    private var readings = 0
    private var buffer = [CChar](repeating: 0, count: 4096)

    public init(path: String) throws {
        self.path = path
        // Non-blocking open and a regular file only, as the recording beside it (StartupFile.openForReading).
        let fd: CInt
        switch StartupFile.openForReading(path: path) {
        case .success(let opened): fd = opened
        case .failure(let refused) where refused.kind == nil && (refused.errno == ENOENT || refused.errno == ENOTDIR):
            throw PressureFileError.missing(path: path)
        case .failure(let refused) where refused.kind == nil && (refused.errno == EACCES || refused.errno == EPERM):
            throw PressureFileError.unreadable(path: path, reason: "permission denied")
        case .failure(let refused):
            throw PressureFileError.unreadable(path: path, reason: refused.reason)
        }
        guard let file = gzdopen(fd, "rb") else {
            close(fd)
            throw PressureFileError.unreadable(path: path, reason: "zlib cannot read it")
        }
        self.file = file
    }

    deinit { gzclose(file) }

    /// "t,p_kpa" as two finite numbers and nothing else but spaces and the line's end; nil otherwise (the
    /// slow path then tells a header, a blank line or an error apart).
    private static func parseRow(_ line: UnsafePointer<CChar>) -> PressureReading? {
        var cursor = UnsafeMutablePointer(mutating: line)
        guard let t = RowNumber.parse(&cursor) else { return nil }
        while cursor.pointee == 32 { cursor += 1 }
        guard cursor.pointee == 44 else { return nil }  // ','
        cursor += 1
        while cursor.pointee == 32 { cursor += 1 }
        guard let p = RowNumber.parse(&cursor) else { return nil }
        while cursor.pointee == 32 || cursor.pointee == 13 || cursor.pointee == 10 { cursor += 1 }
        guard cursor.pointee == 0, PressureFile.isPlausibleTime(t), p.isFinite else { return nil }
        return PressureReading(time: t, kilopascal: p)
    }

    /// The next reading, nil at the end of the file; a file without one reading is an error there.
    public func next() throws -> PressureReading? {
        while true {
            guard gzgets(file, &buffer, Int32(buffer.count)) != nil else {
                var code: Int32 = 0
                _ = gzerror(file, &code)
                if code != Z_OK && code != Z_STREAM_END {
                    throw PressureFileError.unreadable(path: path, reason: "not a valid gzip file")
                }
                if readings == 0 { throw PressureFileError.noReadings(path: path) }
                return nil
            }
            line += 1
            // Most rows are two plain numbers: RowNumber's fast path, as a recording's rows, without a String.
            if let reading = buffer.withUnsafeBufferPointer({ Self.parseRow($0.baseAddress!) }) {
                readings += 1
                return reading
            }
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            // A row of two numbers is short: a line that fills the buffer is not one.
            if !text.hasSuffix("\n") && text.utf8.count >= buffer.count - 1 {
                throw PressureFileError.badLine(path: path, line: line, text: String(text.prefix(80)))
            }
            if let reading = try PressureFile.parse(line: Substring(text), number: line, path: path) {
                readings += 1
                return reading
            }
        }
    }
}

/// Why a pressure file could not be read; `isMissingInput` as RecordingError's (66 against 65).
public enum PressureFileError: Error, CustomStringConvertible, Equatable {
    case missing(path: String)
    case unreadable(path: String, reason: String)
    case badLine(path: String, line: Int, text: String)
    case noReadings(path: String)

    public var isMissingInput: Bool {
        switch self {
        case .missing, .unreadable: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .missing(let path): return "cannot open pressure file \(path): no such file"
        case .unreadable(let path, let reason): return "cannot read pressure file \(path): \(reason)"
        case .badLine(let path, let line, let text):
            return "\(path):\(line): expected the header '\(PressureFile.header)' or two numbers (seconds, kPa), found '\(text)'"
        case .noReadings(let path): return "\(path): no readings: not one row of two numbers t,p_kpa"
        }
    }
}

/// Hands a replay's pressure readings to a barometer sink in step with the samples: after each batch, the
/// readings up to its last sample's time, on the same clock (the replay's loop offset included).
struct PressureFeed {
    let path: String
    let readings: [PressureReading]
    private var next = 0

    init(path: String) throws {
        self.path = path
        readings = try PressureFile.read(path: path)
    }

    /// Readings a second, from the file's first and last times, for STATUS.
    var rateHz: Double? {
        guard readings.count > 1, let first = readings.first, let last = readings.last, last.time > first.time else { return nil }
        return Double(readings.count - 1) / (last.time - first.time)
    }

    func start(_ sink: BarometerSink?) {
        sink?.barometerIdentified(kind: "replay", description: "replay:\(path)", rateHz: rateHz)
        sink?.barometerStateChanged(.running)
    }

    /// Gives `sink` the readings due by `time`; `offset` is the replay's clock offset for this pass.
    mutating func feed(until time: Double, offset: Double, to sink: BarometerSink?) {
        while next < readings.count, readings[next].time + offset <= time {
            var reading = readings[next]
            reading.time += offset
            sink?.receive(pressure: reading)
            next += 1
        }
    }

    /// A new pass of a looped replay starts the file again.
    mutating func rewind() { next = 0 }
}
