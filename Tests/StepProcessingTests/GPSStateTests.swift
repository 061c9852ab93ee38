import Foundation
import StepProcessing
import XCTest

/// The one rule for STATUS's `gps.state`, and the satellites of an epoch taken from all its SKY reports.
final class GPSStateTests: XCTestCase {
    func testStateFollowsTheLinkTheReportsAndTheFixAge() {
        XCTAssertEqual(GPSState.judge(connected: false, fixSinceConnecting: true, lastReportHadPosition: true, lastFixAgeSeconds: 1), .unavailable)
        XCTAssertEqual(GPSState.judge(connected: true, fixSinceConnecting: false, lastReportHadPosition: false, lastFixAgeSeconds: nil), .noFix)
        XCTAssertEqual(GPSState.judge(connected: true, fixSinceConnecting: true, lastReportHadPosition: false, lastFixAgeSeconds: 2), .noFix,
                       "the receiver reports, without a position: no fix, not stale")
        XCTAssertEqual(GPSState.judge(connected: true, fixSinceConnecting: true, lastReportHadPosition: true, lastFixAgeSeconds: 0.4), .fix)
        XCTAssertEqual(GPSState.judge(connected: true, fixSinceConnecting: true, lastReportHadPosition: true, lastFixAgeSeconds: 10), .fix)
        XCTAssertEqual(GPSState.judge(connected: true, fixSinceConnecting: true, lastReportHadPosition: true, lastFixAgeSeconds: 10.1), .stale)
        XCTAssertEqual(GPSState.staleAfterSeconds, 10)
    }

    func testConnectedWithoutReportsIsNoFixWithoutAnErrorAndTurnsStaleWhenTheReceiverGoesQuiet() {
        var tracker = LocationTracker(configuration: LocationConfiguration())
        let start = Date()
        XCTAssertEqual(tracker.snapshot.state(now: start), .unavailable)
        XCTAssertEqual(tracker.snapshot.error, "not connected to gpsd yet")
        tracker.connectionChanged(.connected)
        XCTAssertEqual(tracker.snapshot.state(now: start), .noFix)
        XCTAssertNil(tracker.snapshot.error, "connected at once: no error to show")
        let fixes = (0..<3).map { i in
            Fix(time: start.addingTimeInterval(Double(i)), mode: .threeD, latitudeDegrees: 51.75, longitudeDegrees: -1.25,
                ephMeters: 5, satellitesUsed: 9, arrival: start.addingTimeInterval(Double(i)))
        }
        for fix in fixes { _ = tracker.receive(fix) }
        let last = start.addingTimeInterval(2)
        XCTAssertEqual(tracker.snapshot.state(now: last.addingTimeInterval(1)), .fix)
        XCTAssertEqual(tracker.snapshot.state(now: last.addingTimeInterval(10.5)), .stale)
        tracker.connectionChanged(.unavailable(reason: "lost gpsd"))
        XCTAssertEqual(tracker.snapshot.state(now: last.addingTimeInterval(11)), .unavailable)
        XCTAssertEqual(tracker.snapshot.error, "lost gpsd")
    }

    private func sky(_ uSat: Int?, used: [(Int, Int)]) -> SkyReport {
        SkyReport(uSat: uSat, used: Set(used.map { SatelliteID(gnssid: $0.0, number: $0.1) }))
    }

    func testAnEpochCountsTheSatellitesOfAllItsSkyReports() {
        var epoch = SkyEpoch()
        XCTAssertNil(epoch.closeEpoch(), "no SKY yet")
        // A Quectel EG25-G through gpsd 3.22: the full SKY, then a Galileo-only one with uSat 0.
        epoch.add(sky(14, used: (1...10).map { (0, $0) } + (1...4).map { (6, $0) }))
        epoch.add(sky(0, used: []))
        XCTAssertEqual(epoch.closeEpoch(), 14)
        // Constellations in SKYs of their own, each with its own count: the union.
        epoch.add(sky(8, used: (1...8).map { (0, $0) }))
        epoch.add(sky(3, used: [(3, 13), (3, 27), (3, 37)]))
        XCTAssertEqual(epoch.closeEpoch(), 11)
        // Cumulative SKYs (gpsd repeating the earlier ones): counted once.
        epoch.add(sky(9, used: (1...9).map { (0, $0) }))
        epoch.add(sky(12, used: (1...9).map { (0, $0) } + [(3, 13), (3, 27), (3, 37)]))
        XCTAssertEqual(epoch.closeEpoch(), 12)
        XCTAssertEqual(epoch.closeEpoch(), 12, "a TPV with no SKY since keeps the last count")
        // A uSat without the list.
        epoch.add(sky(7, used: []))
        XCTAssertEqual(epoch.closeEpoch(), 7)
    }

    func testSkyReportReadsGpsdJSON() throws {
        let json = #"{"class":"SKY","device":"/dev/ttyUSB0","nSat":3,"uSat":2,"satellites":[{"PRN":5,"used":true,"gnssid":0,"svid":5},{"PRN":305,"used":true,"gnssid":2,"svid":5},{"PRN":7,"used":false}]}"#
        let report = try XCTUnwrap(SkyEpoch.skyReport(json: Data(json.utf8)))
        XCTAssertEqual(report.uSat, 2)
        XCTAssertEqual(report.used, [SatelliteID(gnssid: 0, number: 5), SatelliteID(gnssid: 2, number: 5)])
        XCTAssertNil(SkyEpoch.skyReport(json: Data(#"{"class":"TPV","mode":3}"#.utf8)))
    }
}
