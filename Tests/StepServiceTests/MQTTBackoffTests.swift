@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The MQTT network thread's pure parts: the waits between attempts (docs/fleet.md) and libmosquitto's words as
/// they read in STATUS's `mqtt.error`. The thread against a real broker: MQTTLateBrokerTests, MQTTTests.
final class MQTTBackoffTests: XCTestCase {
    func testWaitsDoubleFromOneSecondUpToThirty() {
        let backoff = FleetPublisher.backoff
        XCTAssertEqual((1...8).map { backoff.seconds(afterFailures: $0) }, [1, 2, 4, 8, 16, 30, 30, 30])
        XCTAssertEqual(backoff.seconds(afterFailures: 0), 1, "no failure yet: the shortest wait")
        XCTAssertEqual(backoff.seconds(afterFailures: 10_000), 30, "no overflow after a day of failures")
        XCTAssertEqual(MQTTClient.Backoff(firstSeconds: 3, longestSeconds: 20).seconds(afterFailures: 3), 12)
        XCTAssertEqual(MQTTClient.Backoff(firstSeconds: 3, longestSeconds: 20).seconds(afterFailures: 4), 20)
    }

    func testLibraryWordsReadAsAClause() {
        XCTAssertEqual(MQTTClient.clause("Connection refused"), "connection refused")
        XCTAssertEqual(MQTTClient.clause("The connection was lost."), "the connection was lost")
        XCTAssertEqual(MQTTClient.refusalReason("Connection Refused: not authorised."), "not authorised")
        XCTAssertEqual(MQTTClient.refusalReason("Connection Refused: bad user name or password."), "bad user name or password")
        XCTAssertEqual(MQTTClient.clause("TLS error"), "TLS error", "an acronym keeps its capitals")
        XCTAssertEqual(MQTTClient.clause(""), "")
    }
}
