import Foundation
import StepAcquisition
import StepProcessing
import XCTest

/// `stepd analyze` as researchers run it: streaming over real recordings, per-minute, daily and bout files,
/// many files at once, and long recordings' faults (gaps, a clock that jumps back, a gzip cut short).
final class AnalyzeCommandTests: XCTestCase {

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    /// Rows of a CSV file without its header, split at commas.
    private func rows(_ path: String) throws -> [[String]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    /// The recording loaded whole and run through the pipeline in one call: how analyze counted before it streamed.
    private func wholeFileCount(_ path: String) throws -> Int {
        let pipeline = StepPipeline(detector: StepDetectorKind.default.make(sampleRateHz: 60))
        var steps = 0
        pipeline.process(try RecordingReader.read(path: path)) { _ in steps += 1 }
        return steps
    }

    /// Writes samples as a t,x,y,z CSV.
    private func write(_ samples: [Sample], to path: String) throws {
        var text = "t,x,y,z\n"
        for s in samples { text += "\(s.time),\(s.acceleration.x),\(s.acceleration.y),\(s.acceleration.z)\n" }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    private func shifted(_ samples: [Sample], by seconds: Double) -> [Sample] {
        samples.map { var s = $0; s.time += seconds; return s }
    }

    func testEverySharedRecordingInParallelCountsAsTheWholeFilePipelineAndItsMinutesSumToTheTotal() throws {
        let root = try Binaries.sharedData("steps")
        let files = try FileManager.default.subpathsOfDirectory(atPath: root.path)
            .filter { $0.hasSuffix("accel.csv.gz") }.sorted().map { root.appendingPathComponent($0).path }
        XCTAssertGreaterThanOrEqual(files.count, 49)
        let out = try TemporaryDirectory()
        let result = try runCommand(Binaries.stepd, ["analyze", "--output", out.path] + files, timeout: 300)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stderr.contains("\r"), "no progress line when standard error is not a terminal")
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, files.count + 1, "one line a file and a total")
        XCTAssertTrue(lines.last!.hasPrefix("total: "), String(lines.last!))
        var total = 0
        for (file, line) in zip(files, lines) {
            XCTAssertTrue(line.hasPrefix(file + ": "), "in the order given: \(line)")
            // Every accel.csv.gz clashes with the others: NAME is folder-accel.
            let name = URL(fileURLWithPath: file).deletingLastPathComponent().lastPathComponent + "-accel"
            let summary = try json(String(contentsOfFile: out.file(name + ".json"), encoding: .utf8))
            let steps = try XCTUnwrap(summary["steps"] as? Int)
            XCTAssertEqual(steps, try wholeFileCount(file), "streaming changes nothing: \(file)")
            XCTAssertTrue(line.contains(": \(steps) steps in "), String(line))
            let minuteSteps = try rows(out.file(name + ".minutes.csv")).reduce(0) { $0 + Int($1[1])! }
            XCTAssertEqual(minuteSteps, steps, "\(name): minutes sum to the total")
            let daySteps = try rows(out.file(name + ".daily.csv")).reduce(0) { $0 + Int($1[1])! }
            XCTAssertEqual(daySteps, steps, "\(name): days sum to the total")
            for bout in try rows(out.file(name + ".bouts.csv")) {
                XCTAssertGreaterThanOrEqual(Int(bout[2])!, 10, "\(name): a bout has at least 10 steps")
                XCTAssertLessThanOrEqual(Double(bout[0])!, Double(bout[1])!)
            }
            total += steps
        }
        XCTAssertTrue(lines.last!.hasPrefix("total: \(total) steps in \(files.count) files"), String(lines.last!))
    }

    func testAGapStaysAGapAndIsNotInterpolated() throws {
        let dir = try TemporaryDirectory()
        let walk = try RecordingReader.read(path: Binaries.bundledRecording)
        let gapped = dir.file("gapped.csv")
        try write(walk + shifted(walk, by: 3 * 3600), to: gapped)
        let result = try runCommand(Binaries.stepd, ["analyze", "--output", dir.path, "--format", "minutes", "--format", "json", gapped])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("1 gap, 3.0 h not recorded (longest 3.0 h)"), result.stdout)
        let summary = try json(String(contentsOfFile: dir.file("gapped.json"), encoding: .utf8))
        XCTAssertEqual(summary["gaps"] as? Int, 1)
        XCTAssertEqual(try XCTUnwrap(summary["longest_gap_s"] as? Double), 3 * 3600 - 100, accuracy: 1)
        let single = try wholeFileCount(Binaries.bundledRecording)
        XCTAssertEqual(Double(try XCTUnwrap(summary["steps"] as? Int)), Double(2 * single), accuracy: 1)
        let minutes = try rows(dir.file("gapped.minutes.csv")).map { Int($0[0])! }
        XCTAssertEqual(minutes, [0, 60, 10800, 10860], "no minute of the three hours between is listed")
    }

    func testAClockThatJumpsBackIsReportedOnceWithItsLineAndCountedOn() throws {
        let dir = try TemporaryDirectory()
        let walk = try RecordingReader.read(path: Binaries.bundledRecording)
        let jumpy = dir.file("jumpy.csv")
        try write(walk + walk + walk, to: jumpy)   // back to t = 0 twice
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", jumpy])
        XCTAssertEqual(result.status, 0, result.stderr)
        // Line 1 is the header; the first repeat's rows are lines 2...10002.
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("the clock goes back") }
        XCTAssertEqual(warnings.count, 1, result.stderr)
        XCTAssertTrue(warnings[0].hasPrefix("stepd: \(jumpy):\(walk.count + 2): the clock goes back 100."), String(warnings[0]))
        XCTAssertTrue(warnings[0].contains("(2 jumps back in all"), String(warnings[0]))
        let summary = try json(result.stdout)
        XCTAssertEqual(summary["clock_jumps_back"] as? Int, 2)
        // The walk runs on across each seam, which may join a step or two there.
        XCTAssertEqual(Double(try XCTUnwrap(summary["steps"] as? Int)), Double(3 * (try wholeFileCount(Binaries.bundledRecording))), accuracy: 4)
        let times = try XCTUnwrap(summary["step_times"] as? [Double])
        XCTAssertEqual(times, times.sorted(), "the clock carried on: steps stay in order")
    }

    func testATruncatedGzipIsAnalysedUpToTheLastWholeRowWithAWarning() throws {
        let dir = try TemporaryDirectory()
        let whole = try Data(contentsOf: URL(fileURLWithPath: Binaries.bundledRecording))
        let cut = dir.file("cut.csv.gz")
        try whole.prefix(whole.count * 2 / 3).write(to: URL(fileURLWithPath: cut))
        let result = try runCommand(Binaries.stepd, ["analyze", "--json", cut])
        XCTAssertEqual(result.status, 0, result.stderr)
        let match = try XCTUnwrap(result.stderr.range(of: #"cut short after line (\d+);"#, options: .regularExpression), result.stderr)
        let line = Int(result.stderr[match].filter(\.isNumber))!
        let summary = try json(result.stdout)
        XCTAssertEqual(summary["samples"] as? Int, line - 1, "every row up to the cut, the header aside")
        XCTAssertEqual(summary["cut_short"] as? Bool, true)
        // The same rows as a plain file count the same steps.
        let plain = dir.file("rows.csv")
        _ = try runCommand("/bin/sh", ["-c", "gzip -dc '\(cut)' 2>/dev/null | head -n \(line) > '\(plain)'"])
        let again = try json(try runCommand(Binaries.stepd, ["analyze", "--json", plain]).stdout)
        XCTAssertEqual(summary["steps"] as? Int, again["steps"] as? Int)
        XCTAssertGreaterThan(try XCTUnwrap(summary["steps"] as? Int), 50)
    }

    /// The headers docs/analysis.md documents, and --verbose's figures on standard error, so that a CSV or JSON
    /// on standard output stays one; a gzip cut short still says where its time went.
    func testHeadersAreTheDocumentedOnesAndVerboseFiguresGoToStandardError() throws {
        let headers = ["minutes": "time,steps,cadence_spm,walking_s", "bouts": "start,end,steps,cadence_spm,stride_time_s,stride_time_cv,regularity,symmetry,step_length_m,speed_mps",
                       "daily": "date,steps,distance_m,walking_min,bouts,peak_1min_spm,peak_30min_spm,recorded_min"]
        for (format, header) in headers {
            let result = try runCommand(Binaries.stepd, ["analyze", "--format", format, "--verbose", Binaries.bundledRecording])
            XCTAssertEqual(result.status, 0, result.stderr)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.first, header)
            let columns = header.split(separator: ",").count
            for line in lines.dropFirst() {
                XCTAssertEqual(line.split(separator: ",", omittingEmptySubsequences: false).count, columns, "\(format): \(line)")
            }
            XCTAssertTrue(result.stderr.contains("gunzip"), result.stderr)
        }
        let json = try runCommand(Binaries.stepd, ["analyze", "--json", "--verbose", Binaries.bundledRecording])
        XCTAssertNoThrow(try self.json(json.stdout), "standard output is the JSON alone")

        // Twenty walks in a row (200,000 rows), so that reading half of them takes milliseconds that show.
        let dir = try TemporaryDirectory()
        let walk = try RecordingReader.read(path: Binaries.bundledRecording)
        try write((0..<20).flatMap { shifted(walk, by: Double($0) * 100.01) }, to: dir.file("long.csv"))
        _ = try runCommand("/bin/gzip", [dir.file("long.csv")])
        let whole = try Data(contentsOf: URL(fileURLWithPath: dir.file("long.csv.gz")))
        let cut = dir.file("cut.csv.gz")
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: cut))
        let verbose = try runCommand(Binaries.stepd, ["analyze", "--verbose", cut])
        XCTAssertEqual(verbose.status, 0, verbose.stderr)
        let timing = try XCTUnwrap(verbose.stderr.split(separator: "\n").first { $0.contains("gunzip") }, verbose.stderr)
        let match = try XCTUnwrap(timing.range(of: #"gunzip ([0-9.]+) s, parse ([0-9.]+) s"#, options: .regularExpression))
        let figures = timing[match].split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .punctuationCharacters)) }
        XCTAssertEqual(figures.count, 2, String(timing))
        XCTAssertGreaterThan(figures.reduce(0, +), 0, "the split of a pass cut short is kept: \(timing)")
    }

    func testStartAndUnixTimeGiveWallClockMinutesAndDays() throws {
        let dir = try TemporaryDirectory()
        let started = try runCommand(Binaries.stepd, ["analyze", "--start", "2026-11-20T23:59:00+01:00", "--format", "minutes",
                                                      Binaries.bundledRecording])
        XCTAssertEqual(started.status, 0, started.stderr)
        XCTAssertEqual(started.stdout.split(separator: "\n").map { $0.split(separator: ",")[0] },
                       ["time", "2026-11-20T23:59:00+01:00", "2026-11-21T00:00:00+01:00"])
        let daily = try runCommand(Binaries.stepd, ["analyze", "--start", "2026-11-20T23:59:00+01:00", "--format", "daily",
                                                    Binaries.bundledRecording])
        XCTAssertEqual(daily.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: ",")[0] }, ["2026-11-20", "2026-11-21"])

        let walk = try RecordingReader.read(path: Binaries.bundledRecording)
        let unix = dir.file("unix.csv")
        try write(shifted(walk, by: 1_795_132_800), to: unix)   // 2026-11-20T00:00:00Z
        let result = try runCommand(Binaries.stepd, ["analyze", "--format", "bouts", unix], environment: ["TZ": "UTC"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let bout = try XCTUnwrap(result.stdout.split(separator: "\n").dropFirst().first, result.stdout)
        XCTAssertTrue(bout.hasPrefix("2026-11-20T00:00:02."), String(bout))
        let both = try runCommand(Binaries.stepd, ["analyze", "--start", "2026-11-20T08:00:00Z", unix])
        XCTAssertEqual(both.status, 0, both.stderr)
        XCTAssertTrue(both.stderr.contains("its t is Unix time already (1795132800 at the start); --start is ignored"), both.stderr)
        let bad = try runCommand(Binaries.stepd, ["analyze", "--start", "yesterday", Binaries.bundledRecording])
        XCTAssertEqual(bad.status, 64)
        XCTAssertTrue(bad.stderr.contains("--start: expected an ISO-8601 time"), bad.stderr)
    }

    func testAFileThatCannotBeReadIsNamedAndTheOthersAreStillAnalysed() throws {
        let dir = try TemporaryDirectory()
        try "t,x,y,z\n0,1,2,3\n0.01,1,two,3\n".write(toFile: dir.file("bad.csv"), atomically: true, encoding: .utf8)
        let result = try runCommand(Binaries.stepd, ["analyze", Binaries.bundledRecording, dir.file("bad.csv")])
        XCTAssertEqual(result.status, 65, "EX_DATAERR: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("bad.csv:3: expected four numbers"), result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix(Binaries.bundledRecording + ": "), result.stdout)
        XCTAssertTrue(result.stdout.contains("total: "), result.stdout)
        let missing = try runCommand(Binaries.stepd, ["analyze", dir.file("nope.csv.gz")])
        XCTAssertEqual(missing.status, 66, "EX_NOINPUT: \(missing.stderr)")
        let usage = try runCommand(Binaries.stepd, ["analyze", "--format", "minutes", Binaries.bundledRecording, Binaries.bundledRecording])
        XCTAssertEqual(usage.status, 64)
        XCTAssertTrue(usage.stderr.contains("needs --output DIR"), usage.stderr)
    }

    /// Hand-made hostile rows in a real walk: a time that says nothing about when (1e300, 1e20, a Unix time in
    /// nanoseconds, nan, inf, a 200,000-digit number) is refused with its line, 65, by analyze and by the
    /// daemon's replay alike; never a trap (SIGILL from an Int conversion), a hang or 0 steps.
    func testATimeBeyondTenToTheTwelveSecondsIsRefusedWithItsLine() throws {
        let dir = try TemporaryDirectory()
        let clean = try bundledWalkLines()
        let cases: [(String, String)] = [
            ("e300", "1e300"), ("e20", "1e20"), ("nanoseconds", "1795132800000000000"), ("nan", "nan"), ("inf", "-inf"),
            ("negative", "-1e13"), ("digits", "1" + String(repeating: "0", count: 200_000)),
        ]
        for (name, time) in cases {
            var lines = clean
            lines.insert("\(time),0.1,0.2,9.8", at: 5000)   // line 5001
            let path = dir.file("\(name).csv")
            try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
            let result = try runCommand(Binaries.stepd, ["analyze", path], timeout: 60)
            XCTAssertEqual(result.status, 65, "\(name): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("\(path):5001: expected a time t in seconds from -10^12 to 10^12"), "\(name): \(result.stderr)")
            XCTAssertLessThan(result.stderr.utf8.count, 600, "\(name): the row is shown cut short")
        }
        // The daemon refuses the same file at start, before listening, as it does any bad row (stepd(8): 65).
        let replay = try runCommand(Binaries.stepd, ["--replay", dir.file("e20.csv"), "--socket", dir.file("s.sock"),
                                                     "--state-dir", dir.file("state")], timeout: 30)
        XCTAssertEqual(replay.status, 65, replay.stderr)
        XCTAssertTrue(replay.stderr.contains("e20.csv:5001: expected a time t in seconds"), replay.stderr)
    }

    /// What stays legal is still counted: impossible accelerations (1e308) are dropped and counted, a
    /// negative clock and one near 10^12 s count the walk's steps, a line of 2 MB is refused with its number.
    func testHostileButLegalRowsCountTheWalkAndNothingEndsBySignal() throws {
        let dir = try TemporaryDirectory()
        let clean = try bundledWalkLines()
        let cleanCount = try wholeFileCount(Binaries.bundledRecording)
        func shiftedLines(by offset: Double) -> [String] {
            [clean[0]] + clean.dropFirst().map { line in
                var fields = line.split(separator: ",").map(String.init)
                fields[0] = String(format: "%.4f", Double(fields[0])! + offset)
                return fields.joined(separator: ",")
            }
        }
        func analyze(_ name: String, _ lines: [String]) throws -> CommandResult {
            let path = dir.file("\(name).csv")
            try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
            return try runCommand(Binaries.stepd, ["analyze", "--json", path], timeout: 60)
        }
        var huge = clean
        huge.insert("\(clean[3000].split(separator: ",")[0])1,1e308,1e308,-1e308", at: 3001)
        for (name, lines) in [("huge-x", huge), ("negative", shiftedLines(by: -1e6)), ("late", shiftedLines(by: 9e11))] {
            let result = try analyze(name, lines)
            XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)")
            let summary = try json(result.stdout)
            XCTAssertEqual(Double(try XCTUnwrap(summary["steps"] as? Int)), Double(cleanCount), accuracy: 1, name)
        }
        XCTAssertEqual(try json(try analyze("huge-x", huge).stdout)["samples_rejected"] as? Int, 1)
        var giant = clean
        giant.insert(String(repeating: "7", count: 2 << 20), at: 100)
        let long = try analyze("giant", giant)
        XCTAssertEqual(long.status, 65, long.stderr)
        XCTAssertTrue(long.stderr.contains("giant.csv:101: a line longer than 1024 KiB"), long.stderr)
    }

    /// A clock that jumps back and forth by nearly 10^12 s, two rows at a time: the samples after each jump back
    /// are moved to follow on, which would carry the clock past what a double resolves (a minute's end equal to
    /// its start, a loop without end); it is refused at the row where the clock passes 10^12 s. Every other row
    /// back alone is a row out of order, set aside: that file is analysed.
    func testAClockJumpingBackAndForthByAnAgeIsRefusedWhereItPassesTheLimit() throws {
        let dir = try TemporaryDirectory()
        var text = "t,x,y,z\n"
        for i in 0..<300_000 { text += i % 4 < 2 ? "9e11,0.1,0.2,9.8\n" : "-9e11,0.1,0.2,9.8\n" }
        let path = dir.file("seesaw.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCommand(Binaries.stepd, ["analyze", path], timeout: 60)
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("seesaw.csv:6: with the samples after each jump back of the clock moved to follow on, the time passes 10^12 s here"), result.stderr)

        var glitches = "t,x,y,z\n"
        for i in 0..<300_000 { glitches += i % 2 == 0 ? "9e11,0.1,0.2,9.8\n" : "-9e11,0.1,0.2,9.8\n" }
        let single = dir.file("glitches.csv")
        try glitches.write(toFile: single, atomically: true, encoding: .utf8)
        let analysed = try runCommand(Binaries.stepd, ["analyze", single], timeout: 60)
        XCTAssertEqual(analysed.status, 0, analysed.stderr)
    }

    /// The bundled walk with each row rewritten by `row` (t, x, y, z as read), under `header`.
    private func analyzedSteps(_ arguments: [String], environment: [String: String] = [:]) throws -> (steps: Int, stderr: String) {
        let result = try runCommand(Binaries.stepd, ["analyze", "--json"] + arguments, environment: environment)
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
        return (try XCTUnwrap(try json(result.stdout)["steps"] as? Int), result.stderr)
    }

    /// The same walk divided by 9.80665 (g, the unit of actipy, stepcount and the Axivity and ActiGraph exports)
    /// counts the same steps: read as g because its gravity is about 1, with one notice, or because its header
    /// names g; `--units` overrides both.
    func testTheWalkInGCountsTheSameStepsAsInMetresPerSecondSquared() throws {
        let dir = try TemporaryDirectory()
        let metres = try analyzedSteps([Binaries.bundledRecording])
        XCTAssertGreaterThan(metres.steps, 150)
        XCTAssertEqual(metres.stderr, "", "m/s² is the format: nothing to say")
        let g = standardGravity
        let inG = try rewrittenBundledWalk("in-g.csv", in: dir) { t, x, y, z in "\(t),\(x / g),\(y / g),\(z / g)" }
        let detected = try analyzedSteps([inG])
        XCTAssertEqual(detected.steps, metres.steps)
        let notices = detected.stderr.split(separator: "\n")
        XCTAssertEqual(notices.count, 1, detected.stderr)
        XCTAssertTrue(notices.first?.hasPrefix("stepd: \(inG): the accelerations look like g (median magnitude 1.0") == true, detected.stderr)
        let named = try rewrittenBundledWalk("named.csv", in: dir, header: "t,x_g,y_g,z_g") { t, x, y, z in "\(t),\(x / g),\(y / g),\(z / g)" }
        let fromHeader = try analyzedSteps([named])
        XCTAssertEqual(fromHeader.steps, metres.steps)
        XCTAssertEqual(fromHeader.stderr, "", "a header that names the unit needs no notice")
        XCTAssertEqual(try analyzedSteps(["--units", "g", inG]).steps, metres.steps)
        XCTAssertLessThan(try analyzedSteps(["--units", "mps2", inG]).steps, metres.steps / 2, "read as m/s², g is a tenth of a walk")
        let metresNamed = try rewrittenBundledWalk("mps2.csv", in: dir, header: "t,x_mps2,y_mps2,z_mps2") { t, x, y, z in "\(t),\(x),\(y),\(z)" }
        XCTAssertEqual(try analyzedSteps([metresNamed]).steps, metres.steps)
        let bad = try runCommand(Binaries.stepd, ["analyze", "--units", "furlongs", inG])
        XCTAssertEqual(bad.status, 64, bad.stderr)
    }

    /// Times written as date-times, as stepcount's and actipy's CSV write them (with and without an offset;
    /// without one, in the local zone), count the same steps, and the minutes are labelled with the times
    /// written; the stepcount form (`time,x,y,z`, g, date-times) too.
    func testDateTimesAsStepcountAndActipyWriteThemCountTheSameSteps() throws {
        let dir = try TemporaryDirectory()
        let metres = try analyzedSteps([Binaries.bundledRecording]).steps
        let start = 1_399_469_390.0   // 2014-05-07T13:29:50Z, 14:29:50 in London (BST)
        let unix = try rewrittenBundledWalk("unix.csv", in: dir) { t, x, y, z in String(format: "%.4f,\(x),\(y),\(z)", start + t) }
        // 13:29:50 (or 14:29:50) plus t, in ten-thousandths of a second as the recording writes t.
        func dateTime(_ t: Double, _ separator: String, hour: Int) -> String {
            let units = Int((t * 10_000).rounded()) + 50 * 10_000
            let seconds = units / 10_000, minutes = 29 + seconds / 60
            return String(format: "2014-05-07%@%02d:%02d:%02d.%04d", separator, hour + minutes / 60, minutes % 60, seconds % 60, units % 10_000)
        }
        XCTAssertEqual(dateTime(0.0100, " ", hour: 13), "2014-05-07 13:29:50.0100")
        XCTAssertEqual(dateTime(70, "T", hour: 13), "2014-05-07T13:31:00.0000")
        let offset = try rewrittenBundledWalk("offset.csv", in: dir) { t, x, y, z in dateTime(t, "T", hour: 14) + "+01:00,\(x),\(y),\(z)" }
        let utc = try rewrittenBundledWalk("utc.csv", in: dir) { t, x, y, z in dateTime(t, "T", hour: 13) + "Z,\(x),\(y),\(z)" }
        let g = standardGravity
        let stepcount = try rewrittenBundledWalk("stepcount.csv", in: dir, header: "time,x,y,z") { t, x, y, z in
            dateTime(t, " ", hour: 14) + ",\(x / g),\(y / g),\(z / g)"
        }
        let london = ["TZ": "Europe/London"]
        let reference = try analyzedSteps([unix]).steps
        XCTAssertEqual(reference, metres, "the same walk on a Unix clock")
        for path in [offset, utc, stepcount] {
            XCTAssertEqual(try analyzedSteps([path], environment: london).steps, metres, path)
        }
        let minutes = try runCommand(Binaries.stepd, ["analyze", "--format", "minutes", stepcount], environment: london)
        XCTAssertEqual(minutes.status, 0, minutes.stderr)
        XCTAssertEqual(minutes.stdout.split(separator: "\n").dropFirst().first?.split(separator: ",").first,
                       "2014-05-07T14:29:00+01:00", "a time without an offset is the local wall clock: \(minutes.stdout.prefix(200))")
        var lines = try bundledWalkLines()
        lines[3] = "2014-02-30 10:00:00,0,0,9.8"
        try lines.joined(separator: "\n").appending("\n").write(toFile: dir.file("feb30.csv"), atomically: true, encoding: .utf8)
        let refused = try runCommand(Binaries.stepd, ["analyze", dir.file("feb30.csv")])
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("feb30.csv:4: expected four numbers t,x,y,z"), refused.stderr)
    }

    /// A binary file (an executable, an image, a device's own export) is refused as binary in one line, exit
    /// 65, by analyze and by the daemon's replay alike, not shown as a header of mojibake.
    func testABinaryFileIsRefusedAsBinaryInOneLine() throws {
        let dir = try TemporaryDirectory()
        let png = dir.file("walk.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52] + Array(repeating: 0xFF, count: 64))
            .write(to: URL(fileURLWithPath: png))
        _ = try runCommand("/bin/sh", ["-c", "gzip -c '\(Binaries.stepd)' > '\(dir.file("stepd.csv.gz"))'"])
        for (path, byte) in [(png, 7), (Binaries.stepd, 1), (dir.file("stepd.csv.gz"), 1)] {
            let result = try runCommand(Binaries.stepd, ["analyze", path])
            XCTAssertEqual(result.status, 65, result.stderr)
            XCTAssertEqual(result.stderr, "stepd: \(path) is not a text recording (binary data at byte \(byte))\n")
        }
        let replay = try runCommand(Binaries.stepd, ["--replay", png, "--socket", dir.file("s.sock"), "--state-dir", dir.file("state")], timeout: 30)
        XCTAssertEqual(replay.status, 65, replay.stderr)
        XCTAssertTrue(replay.stderr.hasSuffix("stepd: \(png) is not a text recording (binary data at byte 7)\n"), replay.stderr)
    }

    /// A link at an output name (a symbolic link, or a hard link, to a file elsewhere: as root, /etc/shadow) is
    /// replaced by the output, a regular file, and what it pointed to is left as it was; no temporary file stays.
    func testALinkAtAnOutputNameIsReplacedNeverWrittenThrough() throws {
        let out = try TemporaryDirectory(), outside = try TemporaryDirectory()
        let target = outside.file("precious")
        try "keep me\n".write(toFile: target, atomically: false, encoding: .utf8)
        XCTAssertEqual(symlink(target, out.file("walk-inhand.minutes.csv")), 0)
        XCTAssertEqual(link(target, out.file("walk-inhand.json")), 0)
        let result = try runCommand(Binaries.stepd, ["analyze", "--output", out.path, Binaries.bundledRecording])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep me\n", "the link's target is untouched")
        for name in ["walk-inhand.minutes.csv", "walk-inhand.json"] {
            var info = stat()
            XCTAssertEqual(lstat(out.file(name), &info), 0, name)
            XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG, "\(name) is a regular file now")
            XCTAssertEqual(info.st_nlink, 1, name)
        }
        XCTAssertTrue(try String(contentsOfFile: out.file("walk-inhand.minutes.csv"), encoding: .utf8).hasPrefix("time,steps,"))
        XCTAssertNotNil(try json(String(contentsOfFile: out.file("walk-inhand.json"), encoding: .utf8))["steps"] as? Int)
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.contains(".tmp-") }
        XCTAssertEqual(left, [], "no temporary file is left")
    }

    /// On a terminal (script(1) gives one) a progress line comes and goes on standard error; piped, none.
    func testAProgressLineShowsOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("needs script(1) from util-linux") }
        // The bundled walk listed 60 times (600,000 samples): a debug build takes well over the half second
        // between progress lines, and a clean clone (CI) has it.
        let files = Array(repeating: Binaries.bundledRecording, count: 60)
        let command = ([Binaries.stepd, "analyze", "--jobs", "1"] + files).map { "'\($0)'" }.joined(separator: " ")
        let result = try runCommand("/usr/bin/script", ["-qec", command + " >/dev/null", "/dev/null"], timeout: 300)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertTrue(result.stdout.range(of: #"\[\d+/60 files\] [0-9.]+ million samples/s, \d+ s left"#, options: .regularExpression) != nil,
                      result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("\r\u{1B}[K"), "the line is cleared at the end")
        let piped = try runCommand(Binaries.stepd, ["analyze", "--jobs", "1"] + files)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.stderr, "", "no progress line when standard error is not a terminal")
    }
}
