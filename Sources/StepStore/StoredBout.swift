import Foundation
import GRDB
import StepProcessing

/// A walking bout as the history keeps it: its first and last step (wall clock), steps, cadence and gait
/// measures, rounded as the BOUT event gives them, and the placement it was measured at.
public struct StoredBout: Sendable, Equatable {
    public var start: Date
    public var end: Date
    public var steps: Int
    public var cadenceStepsPerMinute: Double
    public var gait: GaitMeasures
    public var placement: String

    public init(start: Date, end: Date, steps: Int, cadenceStepsPerMinute: Double, gait: GaitMeasures, placement: String) {
        self.start = start
        self.end = end
        self.steps = steps
        self.cadenceStepsPerMinute = cadenceStepsPerMinute
        self.gait = gait
        self.placement = placement
    }
}

extension StepStore {
    /// A bouts request returns at most this many (a day of walking has a few hundred).
    public static let maximumBouts = 10_000

    /// The saved bouts that start in [from, to), oldest first.
    public func bouts(from: Date, to: Date, completion: @escaping @Sendable (Result<[StoredBout], StoreError>) -> Void) {
        read(completion: completion) { [self] database in try readBouts(database, from: from, to: to) }
    }

    public func bouts(from: Date, to: Date) throws -> [StoredBout] {
        try readNow { try readBouts($0, from: from, to: to) }
    }

    private func readBouts(_ database: DatabasePool, from: Date, to: Date) throws -> [StoredBout] {
        guard from < to else { throw StoreError.emptyRange(from: from, to: to) }
        let limit = Self.maximumBouts
        let bouts = try wrapRead {
            try database.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT start, end, steps, cadence_spm, stride_time_s, stride_time_cv, regularity, symmetry,
                        step_length_m, speed_mps, placement
                    FROM walking_bout WHERE start >= ? AND start < ? ORDER BY start LIMIT ?
                    """, arguments: [from.timeIntervalSince1970, to.timeIntervalSince1970, limit + 1]).map { row in
                    StoredBout(start: Date(timeIntervalSince1970: row[0]), end: Date(timeIntervalSince1970: row[1]),
                               steps: row[2], cadenceStepsPerMinute: row[3],
                               gait: GaitMeasures(strideTimeSeconds: row[4], strideTimeCV: row[5], regularity: row[6],
                                                  symmetry: row[7], stepLengthMeters: row[8], speedMetersPerSecond: row[9]),
                               placement: row[10])
                }
            }
        }
        guard bouts.count <= limit else { throw StoreError.tooManyRows(what: "bouts", limit: limit) }
        return bouts
    }

    static func write(_ bout: StoredBout, into db: Database) throws {
        try db.execute(sql: """
            INSERT OR REPLACE INTO walking_bout (start, end, steps, cadence_spm, stride_time_s, stride_time_cv, regularity,
                symmetry, step_length_m, speed_mps, placement) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [bout.start.timeIntervalSince1970, bout.end.timeIntervalSince1970, bout.steps,
                             bout.cadenceStepsPerMinute, bout.gait.strideTimeSeconds, bout.gait.strideTimeCV,
                             bout.gait.regularity, bout.gait.symmetry, bout.gait.stepLengthMeters,
                             bout.gait.speedMetersPerSecond, bout.placement])
    }
}
