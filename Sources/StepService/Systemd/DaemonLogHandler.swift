import Foundation
import Glibc
import Logging
import Timekeeping

/// stepd's log lines on stderr. Under systemd the journal stamps each line itself and reads a `<N>`
/// syslog priority prefix (sd-daemon(3)), so a line is `<5>stepd.store: message`; run by hand, a line
/// carries a local timestamp and the level: `2026-11-23 20:41:07.250 notice stepd.store: message`.
public struct DaemonLogHandler: LogHandler {
    public enum Style: Sendable, Equatable {
        case journal
        case terminal
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public let label: String
    public let style: Style
    private let write: @Sendable (String) -> Void

    public init(label: String, level: Logger.Level, style: Style = .detect(),
                write: @escaping @Sendable (String) -> Void = DaemonLogHandler.writeToStandardError) {
        self.label = label
        self.logLevel = level
        self.style = style
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = event.metadata.map { self.metadata.merging($0) { $1 } } ?? self.metadata
        write(Self.format(level: event.level, label: label, message: "\(event.message)", metadata: merged, style: style,
                          date: SystemClock().now))
    }

    /// One line, newline included. Metadata follows the message as sorted key=value pairs.
    public static func format(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata,
                              style: Style, date: Date) -> String {
        var text = message
        if !metadata.isEmpty {
            text += " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // A message with a newline would become two journal entries, the second without its priority.
        text = text.replacingOccurrences(of: "\n", with: " ")
        switch style {
        case .journal:
            return "<\(syslogPriority(level))>\(label): \(text)\n"
        case .terminal:
            return "\(timestamp(date)) \(level) \(label): \(text)\n"
        }
    }

    /// syslog(3) priorities as sd-daemon(3) prefixes take them: LOG_DEBUG 7 ... LOG_CRIT 2.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        let milliseconds = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d.%03d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }

    @Sendable public static func writeToStandardError(_ line: String) {
        // One write(2) per line, so lines from several threads never interleave.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

extension DaemonLogHandler.Style {
    /// The journal when stderr is the stream systemd named in $JOURNAL_STREAM ("device:inode", as
    /// systemd.exec(5) says to check, so that a redirected stderr gets timestamps again), or when stderr is
    /// not a terminal in a process systemd started ($INVOCATION_ID); else the terminal style.
    public static func detect(environment: [String: String] = ProcessInfo.processInfo.environment,
                              descriptor: Int32 = STDERR_FILENO) -> Self {
        var info = stat()
        let described = fstat(descriptor, &info) == 0
        if let stream = environment["JOURNAL_STREAM"], described {
            let parts = stream.split(separator: ":").compactMap { UInt64($0) }
            if parts.count == 2, parts[0] == UInt64(info.st_dev), parts[1] == UInt64(info.st_ino) { return .journal }
        }
        if let invocation = environment["INVOCATION_ID"], !invocation.isEmpty, isatty(descriptor) == 0 { return .journal }
        return .terminal
    }
}
