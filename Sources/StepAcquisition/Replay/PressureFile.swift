import CZlib
import Foundation
import Glibc
import StepProcessing

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

    /// Every reading of the file, in time order as written.
    public static func read(path: String) throws -> [PressureReading] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: throw PressureFileError.missing(path: path)
            case EACCES, EPERM: throw PressureFileError.unreadable(path: path, reason: "permission denied")
            default: throw PressureFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
        }
        guard let file = gzdopen(fd, "rb") else {
            close(fd)
            throw PressureFileError.unreadable(path: path, reason: "zlib cannot read it")
        }
        defer { gzclose(file) }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = gzread(file, &chunk, UInt32(chunk.count))
            if n < 0 { throw PressureFileError.unreadable(path: path, reason: "not a valid gzip file") }
            if n == 0 { break }
            data.append(contentsOf: chunk[0..<Int(n)])
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String) throws -> [PressureReading] {
        var readings: [PressureReading] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let row = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if row.isEmpty { continue }
            let fields = row.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if fields.count == 2, let t = Double(fields[0]), let p = Double(fields[1]), t.isFinite, p.isFinite {
                readings.append(PressureReading(time: t, kilopascal: p))
            } else if index == 0, row.replacingOccurrences(of: " ", with: "") == header {
                continue
            } else {
                throw PressureFileError.badLine(path: path, line: index + 1, text: String(row.prefix(80)))
            }
        }
        guard !readings.isEmpty else { throw PressureFileError.noReadings(path: path) }
        return readings
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
