import Foundation
import StepProcessing

/// Everything the store keeps, as one message: recorded from any queue with `StepStore.record`, applied in
/// order on the store's queue, so a step recorded after a reset is applied after it.
public enum StoreWrite: Sendable {
    /// A step: the count after it, when it happened, and the distance it covered (the stride at the time).
    case step(count: Int, time: Date, distanceMeters: Double)
    /// Floors counted (from the barometer): those added at `time`, and the totals since the reset after them.
    case floors(added: FloorCounts, total: FloorCounts, time: Date)
    /// The count starts again from zero at `since`.
    case reset(since: Date)
    /// The count after the engine took over one the store had saved (see `StepStore.onSavedCounter`).
    case counter(StepStore.Counter)
    /// A point added to the GPS path.
    case trackPoint(StoredTrackPoint)
    /// A stay as it begins, and again when it ends.
    case visit(StoredVisit)
    /// A walking bout that has ended, with its gait measures.
    case bout(StoredBout)

    /// A reset and a count taken over are the user's word on the count: written at once, not with the next
    /// batch.
    var urgency: CommitPolicy.Urgency {
        switch self {
        case .reset, .counter: return .now
        case .step, .floors, .trackPoint, .visit, .bout: return .batched
        }
    }
}

extension StepStore {
    /// The count since the last reset and when that reset was; the distance of those steps (each step's own
    /// stride); the floors since then, nil while no barometer has counted any.
    public struct Counter: Sendable, Equatable {
        public var steps: Int
        public var since: Date
        public var distanceMeters: Double
        public var floors: FloorCounts?
        public init(steps: Int, since: Date, distanceMeters: Double = 0, floors: FloorCounts? = nil) {
            self.steps = steps
            self.since = since
            self.distanceMeters = distanceMeters
            self.floors = floors
        }
    }
}
