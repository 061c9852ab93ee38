import Foundation

/// A stay at one place, like CoreLocation's CLVisit: `departure` is nil while the stay goes on.
public struct Visit: Sendable, Equatable {
    public var arrival: Date
    public var departure: Date?
    public var center: Coordinate
    /// How far the stay's fixes typically lie from its centre (m): three times their median distance.
    public var radiusMeters: Double
    public var fixCount: Int

    public init(arrival: Date, departure: Date?, center: Coordinate, radiusMeters: Double, fixCount: Int) {
        self.arrival = arrival
        self.departure = departure
        self.center = center
        self.radiusMeters = radiusMeters
        self.fixCount = fixCount
    }
}

/// Finds stay points: fixes that remain within `radiusMeters` of their running centre for at least
/// `minimumStaySeconds`. A walker is within the radius well before stopping, so once a stay is long
/// enough its arrival is moved to the first fix close to the stay's median centre ("settled": within
/// three times the fixes' median distance from it, at least `settleMinimumMeters`), and its departure to
/// the last such fix; the median keeps the approach and the way out from pulling the centre.
public struct VisitDetector: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var radiusMeters = 100.0
        public var minimumStaySeconds = 300.0
        public var settleMinimumMeters = 3.0
        /// Visits kept for `visits`, oldest dropped first.
        public var maximumVisits = 1000
        /// Fixes kept for the stay under way; beyond this every other one is dropped (a day at 1 Hz
        /// would be 86 400), which keeps the median and the first and last fix.
        public var maximumCandidateFixes = 20_000
        public init() {}
    }

    public enum Event: Sendable, Equatable {
        case began(Visit)
        case ended(Visit)
    }

    private struct Sample: Sendable {
        var time: Date
        var east: Double
        var north: Double
    }

    public let configuration: Configuration
    public private(set) var visits: [Visit] = []
    private var origin: Coordinate?
    private var candidate: [Sample] = []
    private var sumEast = 0.0
    private var sumNorth = 0.0
    private var openVisit = false

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// The stay going on, if any.
    public var current: Visit? { openVisit ? visits.last : nil }

    /// Feeds an accepted fix (in time order); returns the visits that began or ended with it.
    public mutating func add(_ fix: Fix) -> [Event] {
        guard fix.hasPosition, let time = fix.time else { return [] }
        var events: [Event] = []
        if origin == nil { origin = fix.coordinate }
        let offset = Geodesy.offsetMeters(of: fix.coordinate, from: origin!)
        let sample = Sample(time: time, east: offset.east, north: offset.north)

        if !candidate.isEmpty {
            let n = Double(candidate.count)
            let dEast = sample.east - sumEast / n
            let dNorth = sample.north - sumNorth / n
            if (dEast * dEast + dNorth * dNorth).squareRoot() > configuration.radiusMeters {
                if openVisit, let ended = closeVisit() { events.append(.ended(ended)) }
                restart(at: fix.coordinate, time: time)
                return events
            }
        }
        candidate.append(sample)
        sumEast += sample.east
        sumNorth += sample.north
        if candidate.count > configuration.maximumCandidateFixes { thinCandidate() }
        if openVisit {
            visits[visits.count - 1].fixCount += 1
        } else if let began = confirmStay() {
            events.append(.began(began))
        }
        return events
    }

    // MARK: Private

    private mutating func thinCandidate() {
        let last = candidate.last!
        candidate = stride(from: 0, to: candidate.count - 1, by: 2).map { candidate[$0] } + [last]
        sumEast = candidate.reduce(0) { $0 + $1.east }
        sumNorth = candidate.reduce(0) { $0 + $1.north }
    }

    private mutating func restart(at coordinate: Coordinate, time: Date) {
        origin = coordinate
        candidate = [Sample(time: time, east: 0, north: 0)]
        sumEast = 0
        sumNorth = 0
    }

    /// Opens a visit when the candidate, trimmed to its settled part, lasts long enough.
    private mutating func confirmStay() -> Visit? {
        guard let first = candidate.first, let last = candidate.last,
              last.time.timeIntervalSince(first.time) >= configuration.minimumStaySeconds else { return nil }
        let (center, settle) = settledCenter()
        // Measured between settled fixes: walking away inside the radius does not lengthen a stay.
        guard let arrival = candidate.first(where: { distance($0, center) <= settle }),
              let lastSettled = candidate.last(where: { distance($0, center) <= settle }),
              lastSettled.time.timeIntervalSince(arrival.time) >= configuration.minimumStaySeconds else { return nil }
        let visit = Visit(arrival: arrival.time, departure: nil, center: coordinate(center), radiusMeters: settle,
                          fixCount: candidate.filter { $0.time >= arrival.time }.count)
        visits.append(visit)
        if visits.count > configuration.maximumVisits { visits.removeFirst(visits.count - configuration.maximumVisits) }
        openVisit = true
        return visit
    }

    private mutating func closeVisit() -> Visit? {
        openVisit = false
        guard var visit = visits.last else { return nil }
        let (center, settle) = settledCenter()
        let departure = candidate.last(where: { distance($0, center) <= settle }) ?? candidate.last!
        visit.departure = max(departure.time, visit.arrival)
        visit.center = coordinate(center)
        visit.radiusMeters = settle
        visit.fixCount = candidate.filter { $0.time >= visit.arrival && $0.time <= visit.departure! }.count
        visits[visits.count - 1] = visit
        return visit
    }

    /// The candidate's median centre and its settle distance.
    private func settledCenter() -> (center: (east: Double, north: Double), settle: Double) {
        let center = (east: median(candidate.map(\.east)), north: median(candidate.map(\.north)))
        let spread = median(candidate.map { distance($0, center) })
        return (center, max(configuration.settleMinimumMeters, 3 * spread))
    }

    private func distance(_ s: Sample, _ c: (east: Double, north: Double)) -> Double {
        let de = s.east - c.east, dn = s.north - c.north
        return (de * de + dn * dn).squareRoot()
    }

    private func coordinate(_ c: (east: Double, north: Double)) -> Coordinate {
        Geodesy.coordinate(east: c.east, north: c.north, from: origin!)
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}
