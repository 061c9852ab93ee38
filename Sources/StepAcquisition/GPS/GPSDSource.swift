import CGPS
import Dispatch
import Foundation
import Logging
import StepProcessing
import Timekeeping

/// Reads fixes from gpsd through libgps on a thread of its own (libgps reads block). When gpsd cannot
/// be reached, the link drops, or the port answers but is not gpsd (no VERSION first), it retries after 2 s,
/// doubling up to 60 s while gpsd stays away, and starts again at 2 s once gpsd has greeted it; it reports only
/// changes of state, never each retry.
/// gpsd cannot tell a client that it is back, so the back-off is the trade: a gpsd that went away a moment
/// ago (restarted, its device replugged) is found within seconds, and one that is not there at all (none
/// installed, a board without a receiver) costs a wake-up a minute rather than two a minute at 30 s.
public final class GPSDSource: Sendable {
    public struct Configuration: Sendable {
        public var address = GPSDAddress()
        public var firstRetrySeconds = 2.0
        public var maximumRetrySeconds = 60.0
        /// gpsd sends its VERSION object as it accepts a client (gpsd_json(5): "the daemon ships a VERSION
        /// response to each client when the client first connects"), before anything is asked; a port that
        /// sends nothing for this long, or something else first, is not gpsd.
        public var versionWaitSeconds = 5.0
        public init() {}
    }

    public let configuration: Configuration
    private let logger: Logger
    private let thread: SourceThread

    /// `clock`: what the retries wait on and a fix's arrival is stamped with.
    public init(configuration: Configuration, logger: Logger = Logger(label: "stepd.gpsd"), clock: any DaemonClock = SystemClock()) {
        self.configuration = configuration
        self.logger = logger
        thread = SourceThread(name: "stepd.gpsd", clock: clock)
    }

    public var description: String { "gpsd:\(configuration.address)" }

    public func start(sink: FixSink) {
        thread.start { [self] in run(sink: sink) }
    }

    /// Stops reading; returns once the thread has closed its connection, or after SourceThread's time-out with
    /// a warning.
    public func stop() { thread.stop(logger: logger, "gpsd") }

    private var isStopped: Bool { thread.isStopped }

    private func run(sink: FixSink) {
        var lastReported: GPSConnectionState?
        func report(_ state: GPSConnectionState) {
            guard state != lastReported else { return }
            lastReported = state
            sink.gpsConnectionChanged(state)
        }
        var retrySeconds = configuration.firstRetrySeconds
        while !isStopped {
            var error: UnsafePointer<CChar>?
            logger.debug("gpsd: connecting to \(configuration.address)")
            guard let session = cgps_open(configuration.address.host, configuration.address.port, &error) else {
                report(.unavailable(reason: "cannot reach gpsd at \(configuration.address): \(text(error))"))
                logger.debug("gpsd: cannot connect to \(configuration.address) (\(text(error))); next try in \(retrySeconds) s")
                pause(seconds: retrySeconds)
                retrySeconds = min(retrySeconds * 2, configuration.maximumRetrySeconds)
                continue
            }
            if let why = notGPSD(session) {
                cgps_close(session)
                if isStopped { break }
                // Not the address's fault once, but every time: backed off as an unreachable gpsd is, and
                // reported (so logged) once, since the reason is the same at every try.
                report(.unavailable(reason: "\(configuration.address) answered but is not gpsd: \(why)"))
                logger.debug("gpsd: \(configuration.address) is not gpsd (\(why)); next try in \(retrySeconds) s")
                pause(seconds: retrySeconds)
                retrySeconds = min(retrySeconds * 2, configuration.maximumRetrySeconds)
                continue
            }
            retrySeconds = configuration.firstRetrySeconds
            logger.debug("gpsd: connected to \(configuration.address), watching reports")
            report(.connected)
            let reason = read(session: session, sink: sink)
            cgps_close(session)
            logger.debug("gpsd: disconnected from \(configuration.address): \(reason)")
            if isStopped { break }
            report(.unavailable(reason: "lost gpsd at \(configuration.address): \(reason)"))
            pause(seconds: retrySeconds)
        }
    }

    /// nil when the first message is gpsd's VERSION; else what came instead, for "... is not gpsd: <that>".
    private func notGPSD(_ session: OpaquePointer) -> String? {
        let socket = cgps_fd(session)
        let wait = configuration.versionWaitSeconds
        let ready = thread.whileBlocking(cancel: { _ = shutdown(socket, Int32(SHUT_RDWR)) }) {
            cgps_wait(session, Int32(wait * 1_000_000))
        }
        if isStopped { return "stopped" }
        guard ready == 1 else { return ready == 0 ? "no VERSION within \(Self.seconds(wait)) s" : "no VERSION (read failed)" }
        var message: UnsafePointer<CChar>?
        var error: UnsafePointer<CChar>?
        guard cgps_read(session, &message, &error) == 1, let message else { return "no VERSION (\(text(error)))" }
        guard strstr(message, #""class":"VERSION""#) == nil else { return nil }
        let shown = String(decoding: Data(bytes: message, count: min(strlen(message), 60)), as: UTF8.self)
            .unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.map(String.init).joined()
        return "it sent \"\(shown)\" where gpsd sends VERSION first"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// Reads reports until the link fails or the source stops; returns why it ended.
    private func read(session: OpaquePointer, sink: FixSink) -> String {
        var fix = cgps_fix()
        var epoch = SkyEpoch()
        var error: UnsafePointer<CChar>?
        // stop() shuts the socket down, which ends the wait at once; so the wait can be long, and a gpsd with
        // nothing to send (no receiver, or one that went quiet) costs a wake-up every 30 s rather than two a
        // second. A dead gpsd makes the socket readable at once too.
        let socket = cgps_fd(session)
        while !isStopped {
            let ready = thread.whileBlocking(cancel: { _ = shutdown(socket, Int32(SHUT_RDWR)) }) {
                cgps_wait(session, Self.readWaitMicroseconds)
            }
            if isStopped { break }
            switch ready {
            case 0: continue
            case 1: break
            default: return "read failed"
            }
            var message: UnsafePointer<CChar>?
            guard cgps_read(session, &message, &error) == 1, let message else { return text(error) }
            if Self.isSKY(message) {
                let text = Data(bytes: message, count: strlen(message))
                if let sky = SkyEpoch.skyReport(json: text) { epoch.add(sky) }
                continue
            }
            guard Self.isTPV(message) else { continue }
            cgps_last_fix(session, &fix)
            var report = Fix(fix, arrival: thread.clock.now)
            // libgps keeps only the last SKY's count; the epoch's SKYs together give the fix's (SkyEpoch).
            if let count = epoch.closeEpoch() { report.satellitesUsed = count }
            sink.receive(fix: report)
        }
        return "stopped"
    }

    /// How long a read waits for a report before it looks again (it ends early on a stop or a lost link).
    static let readWaitMicroseconds: Int32 = 30_000_000

    static func isSKY(_ message: UnsafePointer<CChar>) -> Bool {
        strstr(message, #""class":"SKY""#) != nil
    }

    /// Whether a report is a TPV (time-position-velocity); gpsd writes its JSON compactly.
    static func isTPV(_ message: UnsafePointer<CChar>) -> Bool {
        strstr(message, #""class":"TPV""#) != nil
    }

    private func pause(seconds: Double) {
        _ = thread.wait(seconds: seconds)
    }

    private func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? "unknown error"
    }
}

extension Fix {
    /// Lifts the shim's flat struct into a Fix; NaN fields become nil, a zero time means none.
    init(_ c: cgps_fix, arrival: Date) {
        func value(_ x: Double) -> Double? { x.isFinite ? x : nil }
        let time = c.time_sec == 0 && c.time_nsec == 0
            ? nil : Date(timeIntervalSince1970: Double(c.time_sec) + Double(c.time_nsec) / 1e9)
        self.init(time: time, mode: FixMode(gpsdMode: Int(c.mode)), latitudeDegrees: c.latitude_deg,
                  longitudeDegrees: c.longitude_deg, altitudeMSLMeters: value(c.alt_msl_m),
                  altitudeHAEMeters: value(c.alt_hae_m), ephMeters: value(c.eph_m), epvMeters: value(c.epv_m),
                  speedMetersPerSecond: value(c.speed_mps), trackDegrees: value(c.track_deg),
                  climbMetersPerSecond: value(c.climb_mps), satellitesUsed: Int(c.satellites_used), arrival: arrival)
    }
}
