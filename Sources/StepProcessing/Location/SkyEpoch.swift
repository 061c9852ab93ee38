import Foundation

/// A satellite as gpsd's SKY names it: the constellation (`gnssid`, when gpsd knows it) and the number in it
/// (`svid`, else gpsd's `PRN`).
public struct SatelliteID: Hashable, Sendable {
    public var gnssid: Int?
    public var number: Int
    public init(gnssid: Int?, number: Int) {
        self.gnssid = gnssid
        self.number = number
    }
}

/// What one SKY report says about the satellites used: `uSat` and the listed satellites whose `used` is true.
public struct SkyReport: Sendable, Equatable {
    public var uSat: Int?
    public var used: Set<SatelliteID>
    public init(uSat: Int?, used: Set<SatelliteID>) {
        self.uSat = uSat
        self.used = used
    }
}

/// The satellites used in one epoch, from all the SKY reports gpsd sent for it. gpsd's `uSat` is "the number
/// of satellites used in the navigation solution", but an NMEA receiver reports its sky one constellation at
/// a time (a GSV group per talker), and gpsd 3.22 may send a SKY for a group alone: a Quectel EG25-G's
/// Galileo-only SKY with `uSat: 0` follows the full one, so the last SKY is not the epoch's count. The count
/// of a fix is the union of the satellites marked used in the SKYs since the previous TPV, or the largest
/// `uSat` among them when that is more (a SKY that gives the number without the list).
public struct SkyEpoch: Sendable {
    private var used: Set<SatelliteID> = []
    private var largestUSat: Int?
    private var reportsInEpoch = 0
    /// The count given to the last fix: kept for a TPV with no SKY since (gpsd sends SKY less often than
    /// TPV for some receivers: a SiRF's every fifth epoch).
    public private(set) var satellitesUsed: Int?

    public init() {}

    public mutating func add(_ sky: SkyReport) {
        used.formUnion(sky.used)
        if let u = sky.uSat { largestUSat = max(largestUSat ?? 0, u) }
        reportsInEpoch += 1
    }

    /// At a TPV: the count for its epoch (nil before any SKY); the SKYs after it belong to the next epoch.
    public mutating func closeEpoch() -> Int? {
        if reportsInEpoch > 0 {
            satellitesUsed = max(used.count, largestUSat ?? 0)
            used = []
            largestUSat = nil
            reportsInEpoch = 0
        }
        return satellitesUsed
    }

    /// Reads a SKY report from gpsd's JSON; nil for any other class or malformed text.
    public static func skyReport(json: Data) -> SkyReport? {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
              object["class"] as? String == "SKY" else { return nil }
        var used = Set<SatelliteID>()
        for satellite in object["satellites"] as? [[String: Any]] ?? [] where satellite["used"] as? Bool == true {
            guard let number = (satellite["svid"] as? Int) ?? (satellite["PRN"] as? Int) else { continue }
            used.insert(SatelliteID(gnssid: satellite["gnssid"] as? Int, number: number))
        }
        return SkyReport(uSat: object["uSat"] as? Int, used: used)
    }
}
