import Foundation

/// When a minute bin is finished: no step can join it any more. A step is counted up to
/// `StepStore.longestHoldBackSeconds` after it happened (a bout's first steps wait for its confirmation) and
/// reaches the store's inbox within a batch; so minute m (Unix minutes, [60m, 60m + 60)) is finished once
/// the clock has passed its end by that hold-back and a margin for the source's batches.
enum FinishedMinutes {
    /// An IIO buffered source hands over a batch every 0.7 s; two of them.
    static let marginSeconds = 2.0

    static var delaySeconds: Double { StepStore.longestHoldBackSeconds + marginSeconds }

    /// The newest finished minute at `now`.
    static func newest(at now: Date) -> Int64 {
        Int64(((now.timeIntervalSince1970 - delaySeconds) / 60).rounded(.down)) - 1
    }

    /// When the minute after `minute` becomes finished.
    static func nextDeadline(after minute: Int64) -> Date {
        Date(timeIntervalSince1970: Double(minute + 2) * 60 + delaySeconds)
    }
}
