import Foundation
import StepAcquisition
import XCTest

/// RecordingReader against real files: every reason a recording cannot be read is told apart, lines of any
/// length keep their numbers, impossible values are kept for the pipeline to drop.
final class RecordingReaderTests: XCTestCase {
    private func write(_ text: String, _ name: String, in directory: TemporaryDirectory) throws -> String {
        let path = directory.file(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func error(reading path: String) -> RecordingError? {
        do {
            _ = try RecordingReader.read(path: path)
            return nil
        } catch {
            return error as? RecordingError
        }
    }

    func testEachReasonIsToldApartAndClassedMissingOrBadContent() throws {
        let directory = try TemporaryDirectory()
        let plainNamedGzip = try write("hello\n", "hello.csv.gz", in: directory)
        let corrupt = directory.file("corrupt.csv.gz")
        try Data([0x1F, 0x8B, 0x08, 0x00, 0x67, 0x61, 0x72, 0x62, 0x61, 0x67, 0x65]).write(to: URL(fileURLWithPath: corrupt))
        let truncated = directory.file("truncated.csv.gz")
        let whole = try Data(contentsOf: URL(fileURLWithPath: Binaries.bundledRecording))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: truncated))
        let headerOnly = try write("t,x,y,z\n\n", "header.csv", in: directory)

        let cases: [(String, RecordingError, Bool)] = [
            (directory.file("nope.csv"), .missing(path: directory.file("nope.csv")), true),
            (directory.path, .isDirectory(path: directory.path), true),
            (plainNamedGzip, .notGzip(path: plainNamedGzip), false),
            (headerOnly, .noSamples(path: headerOnly, lines: 2), false),
        ]
        for (path, expected, missing) in cases {
            let got = error(reading: path)
            XCTAssertEqual(got, expected, path)
            XCTAssertEqual(got?.isMissingInput, missing, path)
        }
        guard case .corruptGzip(_, 0, let reason)? = error(reading: corrupt) else {
            return XCTFail("\(String(describing: error(reading: corrupt)))")
        }
        XCTAssertFalse(reason.isEmpty)
        guard case .corruptGzip(_, let line, "it is cut short")? = error(reading: truncated) else {
            return XCTFail("\(String(describing: error(reading: truncated)))")
        }
        XCTAssertGreaterThan(line, 1000, "the good lines before the cut are read")
        XCTAssertTrue(error(reading: truncated)!.description.contains("not a valid gzip file"))
        XCTAssertFalse(error(reading: truncated)!.isMissingInput)
    }

    /// ISA-L inflates a gzip file's one member; every other end (a second member, bytes after the member, a
    /// stream cut short, a wrong CRC or length in the trailer) is read on by zlib as before: the same rows, the
    /// same errors.
    func testGzipEndsOtherThanOneCleanMemberReadAsZlibReadsThem() throws {
        let directory = try TemporaryDirectory()
        let rows = (0..<200_000).map { i in "\(Double(i) / 100),\(Double(i % 97) / 7),-0.\(i % 1000),9.81" }
        let first = try write("t,x,y,z\n" + rows[..<120_000].joined(separator: "\n") + "\n", "first.csv", in: directory)
        let second = try write(rows[120_000...].joined(separator: "\n") + "\n", "second.csv", in: directory)
        let expected = rows.map { row in row.split(separator: ",").map { strtod(String($0), nil).bitPattern } }
        func samples(_ path: String) throws -> [[UInt64]] {
            try RecordingReader.read(path: path).map { [$0.time, $0.acceleration.x, $0.acceleration.y, $0.acceleration.z].map(\.bitPattern) }
        }
        let one = directory.file("one.csv.gz"), two = directory.file("two.csv.gz"), trailing = directory.file("trailing.csv.gz")
        _ = try runCommand("/bin/sh", ["-c", "cat '\(first)' '\(second)' | gzip -c > '\(one)' && gzip -c '\(first)' > '\(two)' "
            + "&& gzip -c '\(second)' >> '\(two)' && cp '\(one)' '\(trailing)' && printf 'not gzip' >> '\(trailing)'"])
        for path in [one, two, trailing] {
            let got = try samples(path)
            XCTAssertEqual(got.count, expected.count, path)
            XCTAssertTrue(got == expected, path)
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: one))
        let cut = directory.file("cut.csv.gz")
        try whole.prefix(whole.count * 2 / 3).write(to: URL(fileURLWithPath: cut))
        XCTAssertEqual(error(reading: cut)?.isCutShort, true)
        var stats = RecordingStreamStats()
        var read = 0
        stats = try RecordingReader.stream(path: cut, acceptingCutShort: true) { chunk in read += chunk.samples.count }
        XCTAssertGreaterThan(read, 100_000, "the rows before the cut are read")
        XCTAssertEqual(stats.cutShortAfterLine.map { $0 > read }, true)
        for (offset, reason) in [(8, "incorrect data check"), (4, "incorrect length check")] {
            var bad = whole
            bad[bad.count - offset] ^= 0xFF
            let path = directory.file("bad-\(offset).csv.gz")
            try bad.write(to: URL(fileURLWithPath: path))
            guard case .corruptGzip(_, _, let told)? = error(reading: path) else {
                return XCTFail("\(String(describing: error(reading: path)))")
            }
            XCTAssertTrue(told.hasSuffix(reason), told)
        }
    }

    func testPermissionDeniedIsToldForAnOrdinaryUser() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv to read as nobody")
        }
        let directory = try TemporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let secret = try write("t,x,y,z\n0,1,2,3\n", "secret.csv", in: directory)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        // A copy of the binary where nobody may run it (the build folder may be closed to others).
        let binary = directory.file("stepd")
        try FileManager.default.copyItem(atPath: Binaries.stepd, toPath: binary)
        let result = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                         binary, "analyze", secret])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("cannot open recording \(secret): permission denied"), result.stderr)
        XCTAssertFalse(result.stderr.contains("Domain"), result.stderr)
    }

    func testLongLinesAreNotSplitAndLaterLineNumbersDoNotShift() throws {
        let directory = try TemporaryDirectory()
        // A valid row of 6,000 bytes (a number written with many digits), and one of 9,000 that is not a row.
        let longNumber = "1." + String(repeating: "0", count: 6000)
        var lines = ["t,x,y,z", "0.00,0,0,9.81", "0.01,0,0,\(longNumber)"]
        for i in 2..<50 { lines.append(String(format: "%.2f,0,0,9.81", Double(i) / 100)) }
        let good = try write(lines.joined(separator: "\n") + "\n", "long.csv", in: directory)
        let samples = try RecordingReader.read(path: good)
        XCTAssertEqual(samples.count, 50, "the long row is one sample, not two lines")
        XCTAssertEqual(samples[1].acceleration.z, 1)

        lines.insert(String(repeating: "x", count: 9000), at: 10)   // line 11
        lines.append("0.99,0,zero,9.81")                              // line 53
        let badLong = try write(lines.joined(separator: "\n") + "\n", "bad-long.csv", in: directory)
        XCTAssertEqual(error(reading: badLong).map { if case .badLine(_, let n, _) = $0 { return n } else { return -1 } }, 11)
        lines.remove(at: 10)
        let badLater = try write(lines.joined(separator: "\n") + "\n", "bad-later.csv", in: directory)
        XCTAssertEqual(error(reading: badLater), .badLine(path: badLater, line: 52, text: "0.99,0,zero,9.81"))
        // Through gzip too, where zlib's reads end anywhere in a line.
        let gz = directory.file("bad-later.csv.gz")
        XCTAssertEqual(try runCommand("/bin/sh", ["-c", "gzip -c '\(badLater)' > '\(gz)'"]).status, 0)
        XCTAssertEqual(error(reading: gz), .badLine(path: gz, line: 52, text: "0.99,0,zero,9.81"))
    }

    func testImpossibleValuesAreReadForThePipelineToDropAndTheBundledRecordingReadsWhole() throws {
        let directory = try TemporaryDirectory()
        let path = try write("t,x,y,z\n0,0,0,9.8\n0.01,1e300,nan,inf\n0.02,0,0,9.8\n", "odd.csv", in: directory)
        let samples = try RecordingReader.read(path: path)
        XCTAssertEqual(samples.count, 3)
        XCTAssertEqual(samples[1].acceleration.x, 1e300)
        XCTAssertTrue(samples[1].acceleration.y.isNaN)

        let bundled = try RecordingReader.read(path: Binaries.bundledRecording)
        let lines = try runCommand("/bin/sh", ["-c", "gzip -dc '\(Binaries.bundledRecording)' | wc -l"])
        XCTAssertEqual(bundled.count, Int(lines.stdout.trimmingCharacters(in: .whitespacesAndNewlines))! - 1)
    }

    /// The reader's fast decimal path gives exactly strtod's double for every number: random decimals of 1 to
    /// 19 digits, exponents, signs and odd spellings, and every row of a real recording.
    func testNumbersParseToExactlyStrtodsDoubles() throws {
        let directory = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        var lines = ["t,x,y,z"]
        let odd = ["1e3", "-2.5E-2", "+.5", "5.", "-0", "0x1p3", "00012.50", "123456789012345678", "9007199254740993",
                   "0.1234567890123456789", "1.7976931348623157e308", "4.9e-324", " 7.25", "nan", "-inf"]
        for i in 0..<20_000 {
            let fields = (0..<4).map { k -> String in
                if k > 0 && i % 7 == 0 { return odd[Int.random(in: 0..<odd.count, using: &generator)] }
                let digits = Int.random(in: 1...19, using: &generator)
                let mantissa = String((0..<digits).map { _ in "0123456789".randomElement(using: &generator)! })
                // t has at most 12 digits before the point: a larger time is refused (maximumTimeSeconds); the
                // other columns, parsed by the same code, take every length.
                let point = Int.random(in: 0...(k == 0 ? min(digits, 12) : digits), using: &generator)
                let sign = Bool.random(using: &generator) ? "-" : ""
                return sign + mantissa.prefix(point) + "." + mantissa.dropFirst(point)
            }
            lines.append(fields.joined(separator: ","))
        }
        let path = directory.file("numbers.csv")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let recordings = [path, Binaries.bundledRecording] + ((try? Binaries.sharedData("steps/oxwalk-wrist/oxwalk_p30_wrist_first/accel.csv.gz").path).map { [$0] } ?? [])
        for recording in recordings {
            let text = try runCommand("/bin/sh", ["-c", "gzip -dcf '\(recording)'"]).stdout
            let expected = text.split(separator: "\n").dropFirst().map { line in
                line.split(separator: ",", omittingEmptySubsequences: false).map { strtod(String($0), nil) }
            }
            let samples = try RecordingReader.read(path: recording)
            XCTAssertEqual(samples.count, expected.count, recording)
            for (sample, values) in zip(samples, expected) {
                let got = [sample.time, sample.acceleration.x, sample.acceleration.y, sample.acceleration.z]
                XCTAssertEqual(got.map(\.bitPattern), values.map(\.bitPattern), "\(recording): \(values) read as \(got)")
                if got.map(\.bitPattern) != values.map(\.bitPattern) { return }
            }
        }
    }

    /// A barometer's file is read a row at a time (stepd analyze holds only the readings it waits on): rows
    /// come in order, gzip or plain, a bad row far into the file is told with its line, and a file without a
    /// reading is an error once its end is reached.
    func testPressureFileIsReadRowByRowWithLineNumbers() throws {
        let directory = try TemporaryDirectory()
        var text = "t,p_kpa\n"
        for i in 0..<20_000 { text += "\(Double(i) / 4),\(100 + Double(i % 7) / 1000)\n" }
        let plain = try write(text + "\n5000.5,101\n", "walk.pressure.csv", in: directory)
        _ = try runCommand("/bin/gzip", ["-k", plain])
        for path in [plain, plain + ".gz"] {
            let reader = try PressureFileReader(path: path)
            var count = 0, last = -1.0
            while let reading = try reader.next() {
                XCTAssertGreaterThan(reading.time, last)
                last = reading.time
                count += 1
            }
            XCTAssertEqual(count, 20_001, path)
            XCTAssertEqual(last, 5000.5)
        }
        let bad = try write(text + "5000.25,ten\n", "bad.pressure.csv", in: directory)
        let reader = try PressureFileReader(path: bad)
        var read = 0
        XCTAssertThrowsError(try { while try reader.next() != nil { read += 1 } }()) { error in
            XCTAssertEqual(error as? PressureFileError,
                           .badLine(path: bad, line: 20_002, text: "5000.25,ten"), "the line after the 20,000 rows and the header")
        }
        XCTAssertEqual(read, 20_000, "every row before the bad one was handed over")
        let empty = try write("t,p_kpa\n\n", "empty.pressure.csv", in: directory)
        XCTAssertThrowsError(try PressureFileReader(path: empty).next()) { error in
            XCTAssertEqual(error as? PressureFileError, .noReadings(path: empty))
        }
        XCTAssertThrowsError(try PressureFileReader(path: directory.file("none.csv"))) { error in
            XCTAssertEqual(error as? PressureFileError, .missing(path: directory.file("none.csv")))
        }
    }

    /// A time is seconds within 10^12 of zero or the row is refused with its line (RecordingReader.maximumTimeSeconds):
    /// every stage after the reader can rely on a clock that resolves its samples. The pressure file beside a
    /// recording keeps the same clock and is held to the same limit.
    func testATimeBeyondTenToTheTwelveOrNotANumberIsRefusedWithItsLine() throws {
        let directory = try TemporaryDirectory()
        for time in ["1e300", "1e20", "-1e20", "1.0000001e12", "nan", "inf", "-inf", "1795132800123"] {
            let row = "\(time),0,0,9.8"
            let path = try write("t,x,y,z\n0,0,0,9.8\n0.01,0,0,9.8\n\(row)\n0.03,0,0,9.8\n", "t.csv", in: directory)
            let refused = error(reading: path)
            // 10^12 to 10^17 is Unix time in milliseconds or microseconds: said, with the way to convert it.
            let hint = ["1.0000001e12", "1795132800123"].contains(time)
                ? "; the times look like milliseconds (or microseconds) since 1970: divide the first column by 1000 (or 10^6), "
                    + "e.g. awk -F, -v OFS=, '$1+0==$1{$1=sprintf(\"%.3f\",$1/1000)}1' in.csv > out.csv" : ""
            XCTAssertEqual(refused?.description, "\(path):4: expected a time t in seconds from -10^12 to 10^12 "
                           + "(31,700 years either side of zero), found '\(row)'" + hint, time)
            XCTAssertEqual(refused?.isMissingInput, false)
        }
        for time in ["1e12", "-1e12", "1795132800.123", "-5"] {
            let path = try write("t,x,y,z\n\(time),0,0,9.8\n", "ok.csv", in: directory)
            XCTAssertEqual(try RecordingReader.read(path: path).first?.time, Double(time), time)
        }
        let pressure = try write("t,p_kpa\n0,101\n1e20,101\n", "walk.pressure.csv", in: directory)
        let reader = try PressureFileReader(path: pressure)
        XCTAssertNotNil(try reader.next())
        XCTAssertThrowsError(try reader.next()) { error in
            XCTAssertEqual(error as? PressureFileError, .badLine(path: pressure, line: 3, text: "1e20,101"))
        }
    }
}
