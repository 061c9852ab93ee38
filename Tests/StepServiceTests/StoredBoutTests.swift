import Foundation
import GRDB
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProcessing
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// Walking bouts in the history: a file of schema v4 gains the table on open, keeps its count, and bouts
/// come back as they were recorded, pruned with the rest.
final class StoredBoutTests: XCTestCase {
    private var directory: String!

    override func setUp() {
        directory = "/tmp/stepd-bouts-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func makeStore(retentionDays: Int = 400) -> StepStore {
        var configuration = StepStore.Configuration(directory: directory, stepHoldBackSeconds: Engine().stepHoldBackSeconds)
        configuration.retentionDays = retentionDays
        return StepStore(configuration: configuration)
    }

    private func bout(startingAt start: Date, length: Double?) -> StoredBout {
        StoredBout(start: start, end: start.addingTimeInterval(20), steps: 34, cadenceStepsPerMinute: 99.5,
                   gait: GaitMeasures(strideTimeSeconds: 1.212, strideTimeCV: 0.041, regularity: 0.734, symmetry: 1.02,
                                      stepLengthMeters: length, speedMetersPerSecond: length.map { $0 * 1.65 }),
                   placement: length == nil ? "wrist" : "waist")
    }

    func testAVersionFourFileGainsTheBoutsTableAndKeepsItsCount() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = makeStore().configuration.path
        let old = try DatabaseQueue(path: path)
        try StoreSchema.migrator.migrate(old, upTo: "v4: floors since the last reset in the counter")
        try old.write { db in
            try db.execute(sql: "INSERT INTO counter (id, steps, since, updated) VALUES (1, 42, 1790000000, 1790000000)")
        }
        try old.close()
        let store = makeStore()
        XCTAssertEqual(store.open(fresh: .init(steps: 0, since: Date())).steps, 42, "migrated, not replaced")
        let now = Date()
        let waist = bout(startingAt: now.addingTimeInterval(-100), length: 0.61)
        let wrist = bout(startingAt: now.addingTimeInterval(-50), length: nil)
        store.record(.bout(waist))
        store.record(.bout(wrist))
        let read = try store.bouts(from: now.addingTimeInterval(-3600), to: now)
        XCTAssertEqual(read.count, 2)
        XCTAssertEqual(read.first?.start.timeIntervalSince1970 ?? 0, waist.start.timeIntervalSince1970, accuracy: 1e-6)
        XCTAssertEqual(read.first?.gait, waist.gait)
        XCTAssertEqual(read.last?.gait.stepLengthMeters, nil)
        XCTAssertEqual(read.last?.placement, "wrist")
        XCTAssertEqual(try store.bouts(from: now.addingTimeInterval(-60), to: now).count, 1, "by start")
        store.close()
    }

    func testPruningDropsOldBouts() throws {
        let store = makeStore()
        _ = store.open(fresh: .init(steps: 0, since: Date()))
        store.record(.bout(bout(startingAt: Date().addingTimeInterval(-3 * 86_400), length: 0.6)))
        store.record(.bout(bout(startingAt: Date().addingTimeInterval(-60), length: 0.6)))
        store.close()
        let pruned = makeStore(retentionDays: 2)
        _ = pruned.open(fresh: .init(steps: 0, since: Date()))
        XCTAssertEqual(try pruned.bouts(from: Date().addingTimeInterval(-5 * 86_400), to: Date()).count, 1)
        pruned.close()
    }
}
