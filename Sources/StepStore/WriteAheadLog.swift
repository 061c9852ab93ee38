import Foundation

/// Reads an SQLite write-ahead log the way SQLite recovers it (https://www.sqlite.org/fileformat.html#the_write_ahead_log)
/// to tell a torn tail, which SQLite drops and which is expected after a crash, from damage in the middle.
///
/// SQLite replays frames in order while their salts match the header and their running checksum holds, and
/// silently ignores everything from the first frame that fails. A crash tears only the tail; a frame that
/// fails with frames of the same log (same salts) after it means committed transactions would be dropped
/// without a word: that is what this reports, before SQLite opens the file and folds the prefix in for good.
enum WriteAheadLog {
    private static let headerSize = 32
    private static let frameHeaderSize = 24

    /// Why the log at `path` would lose frames, or nil when it is absent, empty or sound up to a torn tail.
    static func damage(at path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= headerSize else { return nil }
        let bytes = [UInt8](data)
        let magic = word(bytes, 0, bigEndian: true)
        guard magic & 0xFFFF_FFFE == 0x377F_0682 else { return "not an SQLite write-ahead log" }
        let bigEndian = magic & 1 == 1
        let pageSize = Int(word(bytes, 8, bigEndian: true))
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else { return "its header is damaged" }
        var sums = checksum(bytes, 0..<24, bigEndian: bigEndian, seed: (0, 0))
        guard sums.0 == word(bytes, 24, bigEndian: true), sums.1 == word(bytes, 28, bigEndian: true) else {
            return frames(in: bytes, pageSize: pageSize) > 0 ? "its header is damaged; SQLite would ignore every frame" : nil
        }
        let salts = (word(bytes, 16, bigEndian: true), word(bytes, 20, bigEndian: true))
        let frameSize = frameHeaderSize + pageSize
        let count = frames(in: bytes, pageSize: pageSize)
        for index in 0..<count {
            let start = headerSize + index * frameSize
            let frameSalts = (word(bytes, start + 8, bigEndian: true), word(bytes, start + 12, bigEndian: true))
            sums = checksum(bytes, start..<(start + 8), bigEndian: bigEndian, seed: sums)
            sums = checksum(bytes, (start + frameHeaderSize)..<(start + frameSize), bigEndian: bigEndian, seed: sums)
            let valid = frameSalts == salts && sums.0 == word(bytes, start + 16, bigEndian: true)
                && sums.1 == word(bytes, start + 20, bigEndian: true)
            if valid { continue }
            // Frames of this log after the failing one: SQLite would drop them although they were written.
            let later = (index + 1..<count).filter { other in
                let o = headerSize + other * frameSize
                return (word(bytes, o + 8, bigEndian: true), word(bytes, o + 12, bigEndian: true)) == salts
            }.count
            guard later > 0 else { return nil }
            return "frame \(index + 1) of \(count) fails its checksum, and the \(later) written after it would be dropped"
        }
        return nil
    }

    private static func frames(in bytes: [UInt8], pageSize: Int) -> Int {
        max(0, bytes.count - headerSize) / (frameHeaderSize + pageSize)
    }

    private static func word(_ bytes: [UInt8], _ offset: Int, bigEndian: Bool) -> UInt32 {
        let b = (UInt32(bytes[offset]), UInt32(bytes[offset + 1]), UInt32(bytes[offset + 2]), UInt32(bytes[offset + 3]))
        return bigEndian ? b.0 << 24 | b.1 << 16 | b.2 << 8 | b.3 : b.3 << 24 | b.2 << 16 | b.1 << 8 | b.0
    }

    /// SQLite's WAL checksum: Fibonacci-weighted sums of 32-bit words, in the byte order the magic number says.
    private static func checksum(_ bytes: [UInt8], _ range: Range<Int>, bigEndian: Bool,
                                 seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
        var (s0, s1) = seed
        var i = range.lowerBound
        while i < range.upperBound {
            s0 = s0 &+ word(bytes, i, bigEndian: bigEndian) &+ s1
            s1 = s1 &+ word(bytes, i + 4, bigEndian: bigEndian) &+ s0
            i += 8
        }
        return (s0, s1)
    }
}
