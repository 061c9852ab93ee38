import CZlib
import Foundation
import Glibc
import StepProcessing
import StepProtocol
import Timekeeping

/// Reads a `t,x,y,z` recording (seconds, m/s^2), plain or gzip-compressed; zlib reads both transparently.
/// A recording in g (a header naming it, or gravity of about 1 in its first samples) is read as g; a time may
/// be a date-time (`RecordingDateTime`); a file that is binary is refused as such, not parsed into mojibake.
/// Lines may be of any length up to `maximumLineBytes` and keep their numbers in errors. Accelerations that
/// are numbers but impossible (1e300, nan, inf) are kept: the pipeline drops and counts them like a sensor's.
/// A time is refused with its line unless it is within `maximumTimeSeconds` of zero: every later stage
/// (minutes, days, the resampler's grid, the replay's clock) can then rely on a clock that resolves samples.
public enum RecordingReader {
    /// No row of four numbers is this long; a longer line is reported, not buffered without end.
    public static let maximumLineBytes = 1 << 20

    /// The largest |t|, in seconds: 10^12 s is 31,700 years, far past any Unix time a recorder writes (1.8e9
    /// today), while a double still resolves 0.12 ms there, a tenth of a 1 kHz accelerometer's interval. A
    /// time beyond it (1e20, 1e300, a Unix time in nanoseconds) or not a number says nothing about when the
    /// sample was taken, and a clock that large can no longer tell one sample from the next.
    public static let maximumTimeSeconds = 1e12

    /// The whole recording in memory: for a replay that loops. Long recordings go through `stream`.
    public static func read(path: String, units: RecordingUnits = .auto) throws -> [Sample] {
        try readWithStats(path: path, units: units).samples
    }

    /// `read`, with the pass's figures (among them the unit it was read in and the notice that goes with it).
    public static func readWithStats(path: String, units: RecordingUnits) throws -> (samples: [Sample], stats: RecordingStreamStats) {
        var samples: [Sample] = []
        let stats = try stream(path: path, units: units) { chunk in samples += chunk.samples }
        return (samples, stats)
    }

    /// Reads the recording in one pass and hands its samples to `body` in chunks of at most `chunkSamples`,
    /// in order, so memory does not grow with the recording. The chunk is lent `inout`: `body` may change its
    /// samples in place (correct a clock) without a copy; the reader empties it after. Throws as `read` does; when the gzip stream is
    /// cut short (`RecordingError.isCutShort`), every row before the cut has been handed over first, and with
    /// `acceptingCutShort` (and a row before the cut) the pass returns its figures with `cutShortAfterLine` set
    /// instead of throwing: a recorder that lost power leaves a good recording up to its last whole row.
    /// `units`: what x, y, z are in; `.auto` holds the first chunk back until `RecordingUnitsEstimate` has seen
    /// its samples, and every sample handed over is in m/s^2.
    @discardableResult
    public static func stream(path: String, units: RecordingUnits = .auto, chunkSamples: Int = 4096, acceptingCutShort: Bool = false,
                              _ body: (inout RecordingChunk) throws -> Void) throws -> RecordingStreamStats {
        let (file, gzipName) = try open(path: path)
        defer { gzclose(file) }
        _ = gzbuffer(file, 1 << 17)
        let started = monotonicSeconds()
        var stats = RecordingStreamStats()
        var chunk = RecordingChunk()
        chunk.samples.reserveCapacity(chunkSamples)
        chunk.lines.reserveCapacity(chunkSamples)
        var bodySeconds = 0.0, zlibSeconds = 0.0
        var headerUnits = RecordingUnits.auto
        var scale: Double?   // m/s^2 per unit of the file, once decided
        var wallClock = LocalWallClock(zone: .current)
        func deliver(final: Bool = false) throws {
            guard !chunk.samples.isEmpty else { return }
            if scale == nil {
                guard final || chunk.samples.count >= RecordingUnitsEstimate.sampleCount else { return }
                let decision = RecordingUnitsEstimate.decide(units, header: headerUnits,
                                                             firstSamples: chunk.samples.prefix(RecordingUnitsEstimate.sampleCount), path: path)
                stats.units = decision.units
                stats.unitsNotice = decision.notice
                scale = decision.units.metersPerSecondSquaredPerUnit
            }
            if let scale, scale != 1 {
                for i in chunk.samples.indices { chunk.samples[i].acceleration = chunk.samples[i].acceleration * scale }
            }
            chunk.compressedOffset = Int(gzoffset(file))
            let t0 = monotonicSeconds()
            let count = chunk.samples.count
            try body(&chunk)
            bodySeconds += monotonicSeconds() - t0
            stats.samples += count
            chunk.samples.removeAll(keepingCapacity: true)
            chunk.lines.removeAll(keepingCapacity: true)
        }
        // The split of the time, however the pass ends.
        func account() {
            stats.gunzipSeconds = zlibSeconds
            stats.parseSeconds = max(0, monotonicSeconds() - started - zlibSeconds - bodySeconds)
        }
        do {
            let lines = try forEachLine(of: file, path: path, readSeconds: &zlibSeconds) { line, number in
                if let sample = parseLine(line, wallClock: &wallClock) {
                    // Written so that NaN fails too.
                    guard abs(sample.time) <= maximumTimeSeconds else {
                        throw RecordingError.badTime(path: path, line: number, text: excerpt(line))
                    }
                    chunk.samples.append(sample)
                    chunk.lines.append(number)
                    if chunk.samples.count >= chunkSamples { try deliver() }
                    return
                }
                if let named = try checkNonSample(line, number: number, path: path) { headerUnits = named }
            }
            stats.lines = lines
            try deliver(final: true)
            guard stats.samples > 0 else { throw RecordingError.noSamples(path: path, lines: stats.lines) }
        } catch let error as RecordingError where gzipName {
            // A plain CSV named .gz reads fine; anything else named .gz that is not gzip is told as such.
            switch error {
            case .badHeader, .badLine, .badTime, .noSamples, .lineTooLong: throw RecordingError.notGzip(path: path)
            default: throw error
            }
        } catch let error as RecordingError where error.isCutShort {
            try deliver(final: true)
            guard acceptingCutShort, stats.samples > 0, case .corruptGzip(_, let line, _) = error else { throw error }
            stats.cutShortAfterLine = line
        }
        account()
        return stats
    }

    /// A line that is not four numbers: blank lines pass, the header passes on line 1 (the unit it names is
    /// returned, `.auto` for none), anything else is an error.
    private static func checkNonSample(_ line: UnsafePointer<CChar>, number: Int, path: String) throws -> RecordingUnits? {
        let text = excerpt(line)
        if text.isEmpty { return nil }
        if number == 1 {
            guard let units = RecordingHeader.units(of: text) else { throw RecordingError.badHeader(path: path, found: text) }
            return units
        }
        throw RecordingError.badLine(path: path, line: number, text: text)
    }

    /// Seconds on the monotonic clock, for timing passes.
    public static func monotonicSeconds() -> Double { SystemClock().monotonicSeconds }

    /// Opens `path` for zlib, after telling the reasons a person can fix (missing, a directory, permission)
    /// from each other; also says whether the name ends in .gz while the content is not gzip.
    /// Only a regular file is read: opening a FIFO would wait for a writer, holding the daemon's start where
    /// no signal ends it, and a device never ends. O_NONBLOCK makes the open itself return at once, whatever
    /// the path turns out to be when it is opened; reads are blocking again after.
    static func open(path: String) throws -> (file: gzFile, gzipNameOnPlainFile: Bool) {
        let fd: CInt
        switch StartupFile.openForReading(path: path) {
        case .success(let opened): fd = opened
        case .failure(let refused):
            guard let kind = refused.kind else { throw openError(path: path, errno: refused.errno) }
            throw kind == "a directory" ? RecordingError.isDirectory(path: path) : RecordingError.notRegularFile(path: path, kind: kind)
        }
        var magic: [UInt8] = [0, 0]
        let n = pread(fd, &magic, 2, 0)
        if n < 0 {
            let code = errno
            close(fd)
            throw openError(path: path, errno: code)
        }
        let plainDespiteName = path.hasSuffix(".gz") && !(n == 2 && magic == [0x1F, 0x8B])
        guard let file = gzdopen(fd, "rb") else {
            close(fd)
            throw RecordingError.unreadable(path: path, reason: "zlib cannot read it")
        }
        return (file, plainDespiteName)
    }

    static func openError(path: String, errno code: Int32) -> RecordingError {
        switch code {
        case ENOENT, ENOTDIR: return .missing(path: path)
        case EACCES, EPERM: return .permissionDenied(path: path)
        case EISDIR: return .isDirectory(path: path)
        default: return .unreadable(path: path, reason: String(cString: strerror(code)))
        }
    }

    /// Calls `body` with each line (NUL-terminated, without its newline) and its number from 1. A line
    /// split across reads is joined first, so numbers never shift.
    /// Returns the number of lines; adds the time spent in zlib (reading and inflating) to `readSeconds`.
    static func forEachLine(of file: gzFile, path: String, readSeconds: inout Double,
                            _ body: (UnsafePointer<CChar>, Int) throws -> Void) throws -> Int {
        var storage = [CChar](repeating: 0, count: 1 << 17)
        var end = 0          // bytes held, [0, end): at most one partial line after each pass
        var number = 0
        while true {
            let capacity = storage.count
            let readStart = monotonicSeconds()
            let read: Int32 = storage.withUnsafeMutableBufferPointer { buffer in
                gzread(file, buffer.baseAddress! + end, UInt32(capacity - 1 - end))
            }
            readSeconds += monotonicSeconds() - readStart
            if read < 0 { throw corrupt(file, path: path, afterLine: number) }
            if number == 0 && end == 0 && read > 0 {
                let offset = storage.withUnsafeBytes { bytes in
                    firstBinaryByte(in: UnsafeRawBufferPointer(rebasing: bytes[..<min(Int(read), binaryCheckBytes)]))
                }
                if let offset { throw RecordingError.binary(path: path, byte: offset + 1) }
            }
            if read == 0 {
                var status: Int32 = Z_OK
                _ = gzerror(file, &status)
                if status != Z_OK { throw corrupt(file, path: path, afterLine: number) }
                guard end > 0 else { return number }
                storage[end] = 0
                number += 1
                try storage.withUnsafeBufferPointer { try body($0.baseAddress!, number) }
                return number
            }
            end += Int(read)
            var start = 0
            try storage.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress!
                while start < end, let found = memchr(base + start, 10, end - start) {
                    let newline = found.assumingMemoryBound(to: CChar.self)
                    newline.pointee = 0   // strtod skips newlines as white space: end the line here
                    number += 1
                    try body(base + start, number)
                    start = newline - base + 1
                }
            }
            if start > 0 {
                storage.withUnsafeMutableBufferPointer { buffer in
                    let base = buffer.baseAddress!
                    memmove(base, base + start, end - start)
                }
                end -= start
            } else if end == storage.count - 1 {
                // One line fills the buffer: grow it, up to the limit.
                guard storage.count <= maximumLineBytes else {
                    throw RecordingError.lineTooLong(path: path, line: number + 1, limitBytes: maximumLineBytes)
                }
                storage.append(contentsOf: repeatElement(0, count: storage.count))
            }
        }
    }

    /// How much of the start of a file is looked at for binary data: a text recording has none anywhere, but
    /// a recorder that lost power may leave zero-filled blocks far into one that is good up to them.
    static let binaryCheckBytes = 4096

    /// The offset of the first byte no text recording holds (a control character other than tab, line feed,
    /// form feed and carriage return: NUL, the bytes of an ELF, PNG or .cwa header), nil when there is none.
    static func firstBinaryByte(in bytes: UnsafeRawBufferPointer) -> Int? {
        bytes.firstIndex { byte in (byte < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains(byte)) || byte == 0x7F }
    }

    private static func corrupt(_ file: gzFile, path: String, afterLine line: Int) -> RecordingError {
        var status: Int32 = Z_OK
        let message = gzerror(file, &status).map { String(cString: $0) } ?? ""
        if status == Z_ERRNO { return .unreadable(path: path, reason: String(cString: strerror(errno))) }
        let reason = status == Z_BUF_ERROR ? RecordingError.cutShortReason : (message.isEmpty ? "zlib error \(status)" : message)
        return .corruptGzip(path: path, afterLine: line, reason: reason)
    }

    /// The line as shown in an error: trimmed, printable, at most 80 characters.
    static func excerpt(_ line: UnsafePointer<CChar>) -> String {
        let text = String(decoding: UnsafeRawBufferPointer(start: line, count: min(strlen(line), 200)), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let printable = String(text.unicodeScalars.map { $0.properties.isWhitespace || $0.value >= 0x20 && $0.value != 0x7F
            ? Character($0) : "?" })
        return printable.count > 80 ? String(printable.prefix(80)) + "…" : printable
    }

    /// Four digits and '-', read in order so that a shorter line is never read past its end.
    @inline(__always)
    private static func startsAsDate(_ line: UnsafePointer<CChar>) -> Bool {
        func digit(_ c: CChar) -> Bool { UInt8(bitPattern: c) &- 48 < 10 }
        return digit(line[0]) && digit(line[1]) && digit(line[2]) && digit(line[3]) && line[4] == 0x2D
    }

    /// `parseLine` with date-times without an offset read in the local zone (TZ).
    static func parseLine(_ line: UnsafePointer<CChar>) -> Sample? {
        var wallClock = LocalWallClock(zone: .current)
        return parseLine(line, wallClock: &wallClock)
    }

    /// Parses "t,x,y,z"; nil if the line is not four numbers. Each number takes `RowNumber.parse`'s fast path
    /// when it can and strtod's otherwise, with the same result either way. A `t` that starts as a date does
    /// (four digits and '-', which no number does) is read as a date-time, one without an offset by `wallClock`.
    static func parseLine(_ line: UnsafePointer<CChar>, wallClock: inout LocalWallClock) -> Sample? {
        var values = (0.0, 0.0, 0.0, 0.0)
        var cursor = UnsafeMutablePointer(mutating: line)
        for index in 0..<4 {
            let parsed: Double?
            if index == 0 && startsAsDate(line) {
                parsed = RecordingDateTime.parse(&cursor).map { time in
                    time.offsetSeconds.map { time.wallSeconds - Double($0) } ?? wallClock.unixSeconds(wallSeconds: time.wallSeconds)
                }
            } else {
                parsed = RowNumber.parse(&cursor)
            }
            guard let value = parsed else { return nil }
            switch index {
            case 0: values.0 = value
            case 1: values.1 = value
            case 2: values.2 = value
            default: values.3 = value
            }
            while cursor.pointee == 32 { cursor += 1 }
            if index < 3 {
                guard cursor.pointee == 44 else { return nil }  // ','
                cursor += 1
            }
        }
        while cursor.pointee == 32 || cursor.pointee == 13 { cursor += 1 }
        guard cursor.pointee == 0 else { return nil }
        return Sample(time: values.0, x: values.1, y: values.2, z: values.3)
    }
}

/// Samples of a recording in file order, with the line each came from (for messages that name a line).
public struct RecordingChunk: Sendable {
    public var samples: [Sample] = []
    /// `lines[i]` is the line number (from 1) of `samples[i]`.
    public var lines: [Int] = []
    /// How far into the file (compressed bytes) the reader is: progress against the file's size.
    public var compressedOffset = 0

    public init() {}
}

/// What one pass over a recording read and where its time went.
public struct RecordingStreamStats: Sendable, Equatable {
    public var lines = 0
    public var samples = 0
    /// In zlib: reading the file and inflating it (all of the reading for a plain file).
    public var gunzipSeconds = 0.0
    /// Splitting lines and parsing numbers: the reader's time less zlib's and the consumer's.
    public var parseSeconds = 0.0
    /// The last line read when the gzip stream ended early (`stream(acceptingCutShort: true)`); nil otherwise.
    public var cutShortAfterLine: Int?
    /// The unit x, y, z were read in (never `.auto` once a sample has been handed over).
    public var units = RecordingUnits.auto
    /// One line to show the user when the unit was not the format's and no one named it: read as g because
    /// the gravity in the first samples is about 1.
    public var unitsNotice: String?

    public init() {}
}
