import CGPS
import Dispatch
import Foundation
import Logging
import StepProcessing

/// Where the link to gpsd stands, as the source sees it.
public enum GPSConnectionState: Equatable, Sendable {
    case connected
    case unavailable(reason: String)
}

/// Receives what the gpsd source produces, from the source's own thread; the receiver hops to its queue.
public protocol FixSink: AnyObject, Sendable {
    func receive(fix: Fix)
    func gpsConnectionChanged(_ state: GPSConnectionState)
}

/// Why an address for gpsd was refused.
public enum GPSDAddressError: Error, Equatable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let text): return "gpsd address \"\(text)\" is not HOST:PORT (e.g. localhost:2947)"
        }
    }
}

/// gpsd's address, `HOST:PORT` (IPv6 hosts in brackets).
public struct GPSDAddress: Sendable, Equatable, CustomStringConvertible {
    public static let defaultPort = "2947"
    public var host: String
    public var port: String

    public init(host: String = "localhost", port: String = GPSDAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws {
        var host = text
        var port = GPSDAddress.defaultPort
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") { port = String(rest.dropFirst()) } else if !rest.isEmpty { throw GPSDAddressError.malformed(text) }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            port = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, let number = Int(port), (1...65535).contains(number) else { throw GPSDAddressError.malformed(text) }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Reads fixes from gpsd through libgps on a thread of its own (libgps reads block). When gpsd cannot
/// be reached or the link drops, it retries after 2 s, doubling up to 30 s while gpsd stays away, and
/// starts again at 2 s once a connection succeeds; it reports only changes of state, never each retry.
public final class GPSDSource: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var address = GPSDAddress()
        public var firstRetrySeconds = 2.0
        public var maximumRetrySeconds = 30.0
        public init() {}
    }

    public let configuration: Configuration
    private let logger: Logger
    private let lock = NSLock()
    private var stopped = false
    private var thread: Thread?
    private let wakeUp = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    public init(configuration: Configuration, logger: Logger = Logger(label: "stepd.gpsd")) {
        self.configuration = configuration
        self.logger = logger
    }

    public var description: String { "gpsd:\(configuration.address)" }

    public func start(sink: FixSink) {
        let thread = Thread { [self] in
            run(sink: sink)
            finished.signal()
        }
        thread.name = "stepd.gpsd"
        self.thread = thread
        thread.start()
    }

    /// Stops reading and waits (at most a second) for the thread to close its connection.
    public func stop() {
        lock.withLock { stopped = true }
        wakeUp.signal()
        if thread != nil { _ = finished.wait(timeout: .now() + 1) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

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

    /// Reads reports until the link fails or the source stops; returns why it ended.
    private func read(session: OpaquePointer, sink: FixSink) -> String {
        var fix = cgps_fix()
        var error: UnsafePointer<CChar>?
        while !isStopped {
            // A short wait so that stop() is noticed promptly; a dead gpsd makes the socket readable at once.
            switch cgps_wait(session, 500_000) {
            case 0: continue
            case 1: break
            default: return "read failed"
            }
            switch cgps_read(session, &fix, &error) {
            case 1: sink.receive(fix: Fix(fix, arrival: Date()))
            case 0: continue
            default: return text(error)
            }
        }
        return "stopped"
    }

    private func pause(seconds: Double) {
        _ = wakeUp.wait(timeout: .now() + seconds)
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
