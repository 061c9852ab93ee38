import ArgumentParser
import Dispatch
import Foundation
import Locking
import StepProtocol
import Timekeeping

/// The seismometer: a live strip chart of vertical acceleration and a needle gauge, redrawn in place.
struct Graph: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live plot of vertical acceleration with a needle gauge (Ctrl-C to quit).")
    @OptionGroup var options: ConnectionOptions

    @Option(help: "Full scale of the plot and gauge, in m/s^2: smaller is more sensitive.")
    var sensitivity: Double = 4

    @Option(help: "Samples per second to ask for (at most 60).")
    var rate: Double = 30

    @Flag(help: "Exit (69) when the daemon closes the connection, instead of waiting for it to come back.")
    var once = false

    func validate() throws {
        guard sensitivity > 0 else { throw ValidationError("--sensitivity must be positive") }
        guard rate > 0, rate <= 60 else { throw ValidationError("--rate must be between 0 and 60") }
    }

    func run() throws {
        if !options.json, isatty(STDOUT_FILENO) == 0 {
            Output.error(("stepctl: graph draws on a terminal, and standard output is not one; "
                + "use `stepctl graph --json` for MOTION as JSON lines, or `stepctl watch --classes MOTION`\n"))
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let watch = Request(command: .watch, fields: [
            "enable": .bool(true), "classes": .array([.string(WatchClass.motion.rawValue)]), "rate_hz": .number(rate),
        ])
        if options.json {
            // The MOTION lines as the daemon sends them, for a script or a plotting program.
            try exitOnError {
                try DaemonFollower(options: options, watch: watch, once: once).run { client in
                    while true {
                        let raw = try client.readLine()
                        if raw.range(of: Data("\"MOTION\"".utf8)) != nil { emit(String(decoding: raw, as: UTF8.self)) }
                    }
                }
            }
        }
        // The first connection is made here, so that a daemon that is not there is said before the screen changes.
        let first = try exitOnError { () -> Client in
            let client = try options.connect()
            _ = try client.request(watch, expecting: WatchMessage.self)
            return client
        }
        let size = TerminalSize.current()
        let plot = SeismometerView(width: size.columns, height: size.rows, fullScale: sensitivity)
        Terminal.enter()
        var sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { Terminal.leave(); Foundation.exit(0) }
            source.resume()
            return source
        }
        // A resized terminal (SIGWINCH) gets a chart of its new size at once, not a stale frame cut or wrapped.
        signal(SIGWINCH, SIG_IGN)
        let resized = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .main)
        resized.setEventHandler {
            let size = TerminalSize.current()
            plot.resize(width: size.columns, height: size.rows)
            Terminal.clear()
            Terminal.draw(plot.render())
        }
        resized.resume()
        sources.append(resized)
        let follower = DaemonFollower(options: options, watch: watch, once: once,
                                      lost: { _ in plot.note = "stepd went away; waiting for it to come back"; Terminal.draw(plot.render()) },
                                      back: { plot.note = nil })
        let reader = Thread {
            var lastDraw = Date.distantPast
            do {
                try follower.run(first: first) { client in
                    while true {
                        let raw = try client.readLine()
                        // A MOTION with a number that is not finite (sent as null) cannot be drawn, and is skipped.
                        guard case .motion(let motion)? = try? DaemonEvent(line: raw) else { continue }
                        plot.add(vertical: motion.vertical_accel, pitch: motion.pitch_deg, roll: motion.roll_deg,
                                 vibration: motion.vibration_rms)
                        if SystemClock().now.timeIntervalSince(lastDraw) >= 0.05 {
                            lastDraw = SystemClock().now
                            Terminal.draw(plot.render())
                        }
                    }
                }
            } catch {
                DispatchQueue.main.async {
                    Terminal.leave()
                    Output.error("stepctl: \(error)\n")
                    Foundation.exit((error as? ClientError)?.exitStatus.rawValue ?? ExitStatus.unavailable.rawValue)
                }
            }
        }
        reader.start()
        withExtendedLifetime(sources) { dispatchMain() }
    }
}

/// The chart shared by the reader thread (which adds and draws) and the main queue (a resized terminal): the
/// chart behind a lock.
final class SeismometerView: Sendable {
    private let chart: Locked<SeismometerChart>

    init(width: Int, height: Int, fullScale: Double) {
        chart = Locked(SeismometerChart(width: width, height: height, fullScale: fullScale))
    }

    /// A line shown in place of "Ctrl-C to quit" (the daemon gone, waiting for it).
    var note: String? {
        get { chart.withLock { $0.note } }
        set { chart.withLock { $0.note = newValue } }
    }

    func resize(width: Int, height: Int) { chart.withLock { $0.resize(width: width, height: height) } }

    func add(vertical: Double, pitch: Double, roll: Double, vibration: Double) {
        chart.withLock { $0.add(vertical: vertical, pitch: pitch, roll: roll, vibration: vibration) }
    }

    func render() -> [String] { chart.withLock { $0.render() } }
}

/// Draws the strip chart and gauge into lines of text; pure, so it can be tested and run anywhere.
struct SeismometerChart {
    private(set) var width: Int
    private(set) var height: Int
    let fullScale: Double
    private var values: [Double] = []
    /// A line shown in place of "Ctrl-C to quit" (the daemon gone, waiting for it).
    var note: String?
    private var latest = (vertical: 0.0, pitch: 0.0, roll: 0.0, vibration: 0.0)

    /// The smallest terminal the chart fits: three rows of trace besides the title, the 8-row gauge and the two
    /// lines below it; the readings line in its short form. A smaller one gets a line saying what is needed.
    static let minimumColumns = 40, minimumRows = 15
    /// The terminal's own size, for the message of one too small.
    private var terminal: (columns: Int, rows: Int)

    init(width: Int, height: Int, fullScale: Double) {
        terminal = (width, height)
        self.width = max(Self.minimumColumns, min(width, 200))
        self.height = max(Self.minimumRows, min(height, 60))
        self.fullScale = fullScale
    }

    /// Follows the terminal's new size; the newest samples that still fit are kept.
    mutating func resize(width: Int, height: Int) {
        terminal = (width, height)
        self.width = max(Self.minimumColumns, min(width, 200))
        self.height = max(Self.minimumRows, min(height, 60))
        if values.count > self.width - 8 { values.removeFirst(values.count - (self.width - 8)) }
    }

    /// Whether the chart fits the terminal; when not, `render` says how large it must be instead of drawing
    /// a chart whose title and last lines the terminal would cut.
    var fits: Bool { terminal.columns >= Self.minimumColumns && terminal.rows >= Self.minimumRows }

    mutating func add(vertical: Double, pitch: Double, roll: Double, vibration: Double) {
        values.append(vertical)
        if values.count > width - 8 { values.removeFirst(values.count - (width - 8)) }
        latest = (vertical, pitch, roll, vibration)
    }

    func render() -> [String] {
        guard fits else { return tooSmall() }
        let chartRows = height - 12
        var lines: [String] = []
        lines.append(pad(fitting([String(format: " stepd seismometer: vertical acceleration, full scale ±%.1f m/s²", fullScale),
                                  String(format: " stepd seismometer: vertical, ±%.1f m/s²", fullScale),
                                  String(format: " vertical acceleration ±%.1f m/s²", fullScale)])))
        var grid = Array(repeating: Array(repeating: Character(" "), count: width - 8), count: chartRows)
        let middle = chartRows / 2
        for c in 0..<(width - 8) { grid[middle][c] = "·" }
        for (c, v) in values.enumerated() {
            let clamped = max(-1, min(1, v / fullScale))
            let row = middle - Int((clamped * Double(middle)).rounded())
            let (from, to) = (min(row, middle), max(row, middle))
            for r in from...to { grid[r][c] = r == row ? "█" : "│" }
        }
        for (r, row) in grid.enumerated() {
            let label: String
            switch r {
            case 0: label = String(format: "%+5.1f ", fullScale)
            case middle: label = "  0.0 "
            case chartRows - 1: label = String(format: "%+5.1f ", -fullScale)
            default: label = "      "
            }
            lines.append(pad(label + "┤" + String(row)))
        }
        lines.append(contentsOf: gauge(rows: 8))
        lines.append(pad(fitting([
            String(format: " vertical %+6.2f m/s²   pitch %+6.1f°   roll %+6.1f°   vibration %5.3f m/s²",
                   latest.vertical, latest.pitch, latest.roll, latest.vibration),
            String(format: " vertical %+.2f m/s² pitch %+.0f° roll %+.0f° vibration %.3f",
                   latest.vertical, latest.pitch, latest.roll, latest.vibration),
            String(format: " vert %+.2f pitch %+.0f° roll %+.0f° vib %.3f",
                   latest.vertical, latest.pitch, latest.roll, latest.vibration),
        ])))
        lines.append(pad(note.map { " \($0) · Ctrl-C to quit" } ?? " Ctrl-C to quit"))
        while lines.count < height { lines.append(pad("")) }
        return Array(lines.prefix(height))
    }

    /// The first of `texts` (longest first) that fits the width, else the last, cut.
    private func fitting(_ texts: [String]) -> String {
        texts.first { $0.count <= width } ?? texts[texts.count - 1]
    }

    /// What a terminal smaller than the chart shows: its size and the size needed, on as many of its lines as
    /// it has, each cut to its width.
    private func tooSmall() -> [String] {
        let columns = max(1, terminal.columns), rows = max(1, terminal.rows)
        let words = ["stepctl graph needs a terminal of at least \(Self.minimumColumns)x\(Self.minimumRows);",
                     "this one is \(terminal.columns)x\(terminal.rows).", "Enlarge it, or Ctrl-C to quit."]
        var lines: [String] = []
        for text in words {
            var rest = Substring(text)
            while !rest.isEmpty {
                lines.append(String(rest.prefix(columns)))
                rest = rest.dropFirst(columns)
            }
        }
        let shown = Array(lines.prefix(rows))
        return shown.map { $0 + String(repeating: " ", count: max(0, columns - $0.count)) }
            + Array(repeating: String(repeating: " ", count: columns), count: max(0, rows - shown.count))
    }

    /// A half dial with a needle: left is -full scale, up is 0, right is +full scale.
    private func gauge(rows: Int) -> [String] {
        let radius = Double(rows - 1)
        let cx = Double(width) / 2
        var canvas = Array(repeating: Array(repeating: Character(" "), count: width), count: rows)
        // The dial, drawn with twice the columns per row since terminal cells are about twice as tall as wide.
        for step in 0...60 {
            let angle = Double.pi * Double(step) / 60
            let x = Int((cx + cos(angle) * radius * 2).rounded()), y = Int((Double(rows - 1) - sin(angle) * radius).rounded())
            if (0..<width).contains(x), (0..<rows).contains(y) { canvas[y][x] = "." }
        }
        let clamped = max(-1, min(1, latest.vertical / fullScale))
        let angle = Double.pi / 2 - clamped * Double.pi / 2
        for k in 0...Int(radius * 4) {
            let r = Double(k) / 4
            let x = Int((cx + cos(angle) * r * 2).rounded()), y = Int((Double(rows - 1) - sin(angle) * r).rounded())
            if (0..<width).contains(x), (0..<rows).contains(y) { canvas[y][x] = "●" }
        }
        canvas[rows - 1][Int(cx)] = "◆"
        return canvas.map { pad(String($0)) }
    }

    private func pad(_ s: String) -> String {
        s.count >= width ? String(s.prefix(width)) : s + String(repeating: " ", count: width - s.count)
    }
}

struct TerminalSize {
    var columns: Int
    var rows: Int

    static func current() -> TerminalSize {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return TerminalSize(columns: Int(size.ws_col), rows: Int(size.ws_row))
        }
        return TerminalSize(columns: 80, rows: 24)
    }
}

/// The alternate screen, hidden cursor, and drawing from the top left without scrolling.
enum Terminal {
    static func enter() { write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J") }
    static func clear() { write("\u{1B}[2J") }
    static func leave() { write("\u{1B}[?25h\u{1B}[?1049l") }
    static func draw(_ lines: [String]) { write("\u{1B}[H" + lines.joined(separator: "\r\n")) }
    private static func write(_ s: String) { Output.write(s) }
}
