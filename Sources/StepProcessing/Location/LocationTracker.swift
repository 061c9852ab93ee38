import Foundation

/// Settings for position tracking: the track's error bound and the visit detector.
public struct LocationConfiguration: Sendable {
    /// gpsd's address as shown in STATUS.
    public var gpsd = GPSDAddress().description
    public var track = TrackBuilder.Configuration()
    public var visits = VisitDetector.Configuration()
    public var strideStretch = StrideStretch.Configuration()
    /// False with --no-gps: STATUS says so instead of waiting for gpsd.
    public var enabled = true
    public init() {}
}

/// Something that happened to the position that watchers may want pushed to them.
public enum LocationEvent: Sendable {
    case position(Fix)
    case visit(Visit)
}

/// What the processing queue publishes about position for the server to read at any time.
public struct LocationSnapshot: Sendable {
    public init() {}
    /// The state without the fix's age: `unavailable`, `no_fix` or `fix` (`state(now:)` adds `stale`).
    public var state = "unavailable"
    public var connected = false
    /// A fix was accepted since the last connection to gpsd.
    public var fixSinceConnecting = false
    public var lastReportHadPosition = false
    /// The last failure of the link (kept after recovery, so that a flapping link can be diagnosed), or why
    /// GPS is unavailable.
    public var error: String?
    public var gpsd = ""
    /// False with --no-gps.
    public var enabled = true
    public var position: Fix?
    public var fixesAccepted = 0
    public var fixesIgnored = 0
    /// Reports refused as implausible: dated in the future, or eph/epv negative or absurd (FixGate).
    public var fixesRejected = 0
    public var connections = 0
    public var distanceMeters = 0.0
    public var trackPoints = 0
    /// Accepted fixes kept out of the path by `maximumEphMeters` (`track_max_eph_m`).
    public var fixesOverMaximumEph = 0
    public var maximumEphMeters = 25.0
    /// Why the track and visits saved by earlier runs could not be read at start (the path began afresh).
    public var restoreError: String?
    /// Since when the gpsd source has been unavailable (lost, unreachable, not gpsd); nil while connected, and
    /// before the source first reports.
    public var unavailableSince: Date?

    /// The state STATUS reports at `now` (GPSState's rule).
    public func state(now: Date) -> GPSState {
        GPSState.judge(connected: connected, fixSinceConnecting: fixSinceConnecting,
                       lastReportHadPosition: lastReportHadPosition,
                       lastFixAgeSeconds: position.map { now.timeIntervalSince($0.arrival) })
    }
}

/// What the position side hands the store: each point added to the path, and each visit as it begins and ends.
public enum LocationRecord: Sendable {
    case trackPoint(TrackPoint)
    case visit(Visit)
}

/// Position state: gates gpsd's reports, builds the track, detects visits. Owned by the engine's
/// processing queue; a value, so it is exercised in tests without threads.
public struct LocationTracker {
    public let configuration: LocationConfiguration
    private var gate = FixGate()
    public private(set) var track: TrackBuilder
    public private(set) var visits: VisitDetector
    private var stretch: StrideStretch
    /// A stretch walked under a good fix since the last one was taken: for the stride calibration.
    public private(set) var completedStretch: (meters: Double, steps: Int)?
    private var current: Fix?
    private var connected = false
    private var lastReportHadPosition = false
    private var acceptedSinceConnecting = false
    /// The last failure; nil until one happens (a gpsd connected at once has no error to show).
    private var lastError: String?
    private var accepted = 0
    private var ignored = 0
    private var connections = 0
    /// False until the source first reports, so that a gpsd missing from the start is logged once too.
    public private(set) var heardFromSource = false
    /// Stays saved by earlier runs (the detector knows only this run's), oldest first.
    public private(set) var restoredVisits: [Visit] = []
    /// Told of every point added to the path and every visit that begins or ends: the store.
    public var recorder: (@Sendable (LocationRecord) -> Void)?

    public init(configuration: LocationConfiguration) {
        self.configuration = configuration
        track = TrackBuilder(configuration: configuration.track)
        visits = VisitDetector(configuration: configuration.visits)
        stretch = StrideStretch(configuration: configuration.strideStretch)
        if !configuration.enabled { lastError = "GPS disabled (--no-gps)" }
    }

    /// Every visit kept, this run's after those restored.
    public var allVisits: [Visit] {
        let all = restoredVisits + visits.visits
        return Array(all.suffix(visits.configuration.maximumVisits))
    }

    /// Continues the path and the visits saved by an earlier run: the points are built into the path again
    /// (so its length follows the same rules), the visits listed before this run's.
    public mutating func restore(points: [Fix], visits restored: [Visit]) {
        for fix in points { track.add(fix) }
        restoredVisits = restored
    }

    /// The stretch completed by the last fix, once.
    public mutating func takeCompletedStretch() -> (meters: Double, steps: Int)? {
        defer { completedStretch = nil }
        return completedStretch
    }

    /// The GPS state without the fix's age (which only the reader's clock knows), for the log's transitions.
    public var state: String {
        GPSState.judge(connected: connected, fixSinceConnecting: acceptedSinceConnecting,
                       lastReportHadPosition: lastReportHadPosition, lastFixAgeSeconds: 0).rawValue
    }

    public mutating func connectionChanged(_ connection: GPSConnectionState) {
        heardFromSource = true
        switch connection {
        case .connected:
            connected = true
            connections += 1
            acceptedSinceConnecting = false
            lastReportHadPosition = false
            gate.connected()
        case .unavailable(let reason):
            connected = false
            lastError = reason
        }
    }

    /// Takes one report from gpsd, with the step count now; returns the events it caused.
    public mutating func receive(_ fix: Fix, steps: Int = 0) -> [LocationEvent] {
        lastReportHadPosition = fix.hasPosition
        switch gate.judge(fix) {
        case .accepted:
            accepted += 1
            acceptedSinceConnecting = true
            current = fix
            // Visits use the same fixes as the track: a stay is not judged from 100 m-wide guesses. A fix no
            // later than the path's end (one restored from the store, gpsd's cached fix) is not a new point.
            if let end = track.points.last?.time, let time = fix.time, time <= end { return [.position(fix)] }
            guard track.add(fix) else { return [.position(fix)] }
            if let point = track.points.last { recorder?(.trackPoint(point)) }
            completedStretch = stretch.add(fixTime: fix.time!, ephMeters: fix.ephMeters,
                                           trackDistanceMeters: track.distanceMeters, steps: steps)
            return visits.add(fix).map { event -> LocationEvent in
                switch event {
                case .began(let v), .ended(let v):
                    recorder?(.visit(v))
                    return .visit(v)
                }
            } + [.position(fix)]
        case .refines:
            // A later TPV of the same epoch completes the fix (e.g. epv once GSA arrived); same point.
            current = fix
            return []
        case .noFix, .noTime, .awaitingTimeToMoveOn, .stale:
            ignored += 1
            return []
        case .future, .implausibleError:
            // Counted by the gate (fixes_rejected); never the current position.
            return []
        }
    }

    public var snapshot: LocationSnapshot {
        var s = LocationSnapshot()
        s.state = state
        s.error = lastError ?? (connected || heardFromSource ? nil : "not connected to gpsd yet")
        s.connected = connected
        s.fixSinceConnecting = acceptedSinceConnecting
        s.lastReportHadPosition = lastReportHadPosition
        s.gpsd = configuration.gpsd
        s.enabled = configuration.enabled
        s.position = current
        s.fixesAccepted = accepted
        s.fixesIgnored = ignored
        s.fixesRejected = gate.rejected
        s.connections = connections
        s.distanceMeters = track.distanceMeters
        s.trackPoints = track.points.count
        s.fixesOverMaximumEph = track.fixesOverMaximumEph
        s.maximumEphMeters = track.configuration.maximumEphMeters
        return s
    }
}
