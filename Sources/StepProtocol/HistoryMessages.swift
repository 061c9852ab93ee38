import Foundation
import StepProcessing

/// The store's part of STATUS.
public struct StoreStatusMessage: Codable, Sendable, Equatable {
    public var path: String
    /// "ok", "starting", "failed" (then `error` says why; counting goes on in memory) or "closed".
    public var state: String
    public var error: String?
    public var retention_days: Int
    /// When the last batch reached the database.
    public var last_commit: String?
    public init(path: String, state: String, error: String?, retention_days: Int, last_commit: String?) {
        self.path = path
        self.state = state
        self.error = error
        self.retention_days = retention_days
        self.last_commit = last_commit
    }
}

/// One bin of a HISTORY reply. `start` and `end` carry the daemon's local UTC offset, so a day bin reads as
/// the local day it is; `date` (day bins) is that day.
public struct HistoryBinMessage: Codable, Sendable, Equatable {
    public var start: String
    public var end: String
    public var date: String?
    public var steps: Int
    public var distance_m: Double
    /// Absent when no floor source reported in the bin.
    public var floors: Int?
    public init(start: String, end: String, date: String?, steps: Int, distance_m: Double, floors: Int?) {
        self.start = start
        self.end = end
        self.date = date
        self.steps = steps
        self.distance_m = distance_m
        self.floors = floors
    }
}

/// The reply to `{"cmd":"history"}`: the bins with steps in [from, to), oldest first, and their sums.
public struct HistoryMessage: Codable, Sendable {
    public static let messageClass = "HISTORY"
    public var `class` = Self.messageClass
    public var from: String
    public var to: String
    public var bin: String
    public var time_zone: String
    public var bins: [HistoryBinMessage]
    public var steps: Int
    public var distance_m: Double
    /// Floors climbed over the bins; absent when no barometer reported in any of them.
    public var floors: Int?
    /// With `"bouts":true`: the walking bouts that start in [from, to), oldest first, each as its BOUT event.
    public var bouts: [BoutMessage]?
    public var id: JSONValue?
    public init(from: String, to: String, bin: String, time_zone: String, bins: [HistoryBinMessage],
                bouts: [BoutMessage]? = nil, id: JSONValue? = nil) {
        self.from = from
        self.to = to
        self.bin = bin
        self.time_zone = time_zone
        self.bins = bins
        steps = bins.reduce(0) { $0 + $1.steps }
        distance_m = bins.reduce(0) { $0 + $1.distance_m }
        floors = bins.contains { $0.floors != nil } ? bins.reduce(0) { $0 + ($1.floors ?? 0) } : nil
        self.bouts = bouts
        self.id = id
    }
}

/// Formats many instants in one zone (HISTORY replies format thousands).
public struct LocalTimestamps {
    public let zone: LocalZone

    public init(zone: LocalZone) { self.zone = zone }

    public func string(_ moment: Date) -> String { Timestamp.string(moment, in: zone) }
    public func day(_ moment: Date) -> String { Timestamp.day(moment, in: zone) }
}
