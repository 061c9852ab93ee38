import Foundation
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProcessing
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The structs the daemon configures carry defaults of their own beside ConfigOption.all's, which the flags,
/// stepd.conf and the docs show: each pair is tied here, so that a default changed on one side only fails.
final class ConfigDefaultsTests: XCTestCase {
    private func defaultValue(_ key: String) -> ConfigValue? {
        let option = ConfigOption.named(key)
        return option.kind.parse(option.defaultText)
    }

    private func number(_ key: String) -> Double? {
        switch defaultValue(key) {
        case .number(let n): return n
        case .integer(let n): return Double(n)
        default: return nil
        }
    }

    private func integer(_ key: String) -> Int? {
        if case .integer(let n) = defaultValue(key) { return n }
        return nil
    }

    func testEngineDefaultsAreTheOptionsDefaults() {
        let engine = Engine.Configuration()
        XCTAssertEqual(number("height"), engine.heightMeters)
        XCTAssertEqual(defaultValue("detector"), .string(engine.detector.rawValue))
        let location = engine.location
        XCTAssertEqual(defaultValue("gpsd"), .string(location.gpsd))
        XCTAssertEqual(number("track_max_eph_m"), location.track.maximumEphMeters)
        XCTAssertEqual(number("visit_radius_m"), location.visits.radiusMeters)
        XCTAssertEqual(number("visit_min_stay_s"), location.visits.minimumStaySeconds)
    }

    func testServerLimitsAreTheOptionsDefaults() {
        let server = ProtocolServer.Configuration(socketPath: "/tmp/unused.sock")
        XCTAssertEqual(integer("max_clients"), server.maximumClients)
        XCTAssertEqual(integer("max_clients_per_user"), server.maximumClientsPerUser)
        XCTAssertEqual(integer("reserved_clients"), server.reservedClients)
        XCTAssertEqual(integer("max_requests_in_flight"), server.maximumRequestsInFlight)
        XCTAssertEqual(integer("max_unsent_kib").map { $0 * 1024 }, server.maximumUnsentBytes)
        XCTAssertNil(server.adminGroup, "admin_group: (none)")
    }

    func testStoreRetentionIsTheOptionsDefault() {
        let store = StepStore.Configuration(directory: "/tmp/unused", stepHoldBackSeconds: 1)
        XCTAssertEqual(integer("retention_days"), store.retentionDays)
    }
}
