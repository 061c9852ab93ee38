import Foundation
import Locking
import Logging
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProcessing
import StepProtocol
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The position side's part in persistence, without threads: what it hands the store, and a path continued
/// from saved points measuring what the uninterrupted one measured.
final class LocationTrackerRestoreTests: XCTestCase {
    /// A fix every second walking east at 1.4 m/s from Oxford, eph 4 m.
    private func walk(_ count: Int, from start: Date = Date(timeIntervalSince1970: 1_790_000_000)) -> [Fix] {
        (0..<count).map { i in
            let east = Double(i) * 1.4
            return Fix(time: start.addingTimeInterval(Double(i)), mode: .threeD, latitudeDegrees: 51.752,
                       longitudeDegrees: -1.2577 + east / (111_195 * cos(51.752 * .pi / 180)), ephMeters: 4,
                       satellitesUsed: 8, arrival: start.addingTimeInterval(Double(i)))
        }
    }

    private final class Records: Sendable {
        private let lists = Locked<(points: [TrackPoint], visits: [Visit])>(([], []))
        var points: [TrackPoint] { lists.withLock { $0.points } }
        var visits: [Visit] { lists.withLock { $0.visits } }
        func add(_ record: LocationRecord) {
            lists.withLock {
                switch record {
                case .trackPoint(let p): $0.points.append(p)
                case .visit(let v): $0.visits.append(v)
                }
            }
        }
    }

    /// A store that cannot be read at start (its state directory is a file) loses the track and visits of
    /// earlier runs for this one: STATUS says so, rather than a `try?` dropping them without a word.
    func testATrackThatCannotBeRestoredIsSaidInTheGPSStatus() throws {
        let directory = NSTemporaryDirectory() + "stepd-restore-\(UUID().uuidString.prefix(8))"
        XCTAssert(FileManager.default.createFile(atPath: directory, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = Engine()
        let store = StepStore(configuration: StepStore.Configuration(directory: directory,
                                                                     stepHoldBackSeconds: engine.stepHoldBackSeconds))
        EngineRecording.start(engine: engine, store: store, logger: Logger(label: "test"))
        defer { _ = store.close() }
        let reason = try XCTUnwrap(engine.locationSnapshot.restoreError, "the failed restore is kept")
        XCTAssertEqual(LocationWire.status(engine.locationSnapshot, now: Date()).restore_error, reason)
    }

    func testEveryPointAddedToThePathIsHandedToTheStore() {
        let records = Records()
        var tracker = LocationTracker(configuration: LocationConfiguration())
        tracker.recorder = { records.add($0) }
        tracker.connectionChanged(.connected)
        for fix in walk(120) { _ = tracker.receive(fix) }
        XCTAssertEqual(records.points, tracker.track.points)
        XCTAssertFalse(records.points.isEmpty)
    }

    func testARestoredPathMeasuresWhatTheUninterruptedOneDid() {
        var whole = LocationTracker(configuration: LocationConfiguration())
        whole.connectionChanged(.connected)
        let fixes = walk(300)
        for fix in fixes { _ = whole.receive(fix) }

        var first = LocationTracker(configuration: LocationConfiguration())
        first.connectionChanged(.connected)
        for fix in fixes.prefix(150) { _ = first.receive(fix) }
        let saved = first.track.points.map { StoredTrackPoint($0).fix }
        var second = LocationTracker(configuration: LocationConfiguration())
        second.restore(points: saved, visits: [])
        XCTAssertEqual(second.track.points, first.track.points)
        XCTAssertEqual(second.track.distanceMeters, first.track.distanceMeters, accuracy: 1e-9)
        second.connectionChanged(.connected)
        // gpsd hands a new client its cached fix: no later than the path's end, so not a new point.
        _ = second.receive(fixes[149])
        XCTAssertEqual(second.track.points.count, first.track.points.count)
        for fix in fixes.dropFirst(150) { _ = second.receive(fix) }
        XCTAssertEqual(second.track.distanceMeters, whole.track.distanceMeters, accuracy: 1e-6)
    }

    func testRestoredVisitsComeBeforeThisRunsAndRoundTripThroughTheStoredForm() {
        let visit = Visit(arrival: Date(timeIntervalSince1970: 1_790_000_000), departure: Date(timeIntervalSince1970: 1_790_000_600),
                          center: Coordinate(latitudeDegrees: 51.752, longitudeDegrees: -1.2548), radiusMeters: 3.5, fixCount: 601)
        XCTAssertEqual(StoredVisit(visit).visit, visit)
        var tracker = LocationTracker(configuration: LocationConfiguration())
        tracker.restore(points: [], visits: [visit])
        XCTAssertEqual(tracker.allVisits, [visit])
    }
}
