import Foundation

/// When a minute bin is finished: no step can join it any more. A step is counted up to `holdBackSeconds`
/// after it happened (the configured detector's delay: a bout's first steps wait for its confirmation) and
/// reaches the store's inbox within a batch; so minute m (Unix minutes, [60m, 60m + 60)) is finished once
/// the clock has passed its end by that hold-back and a margin for the source's batches.
struct FinishedMinutes {
    /// An IIO buffered source hands over a batch every 0.7 s; two of them.
    static let marginSeconds = 2.0

    /// `StepStore.Configuration.stepHoldBackSeconds`.
    var holdBackSeconds: Double

    var delaySeconds: Double { holdBackSeconds + Self.marginSeconds }

    /// The newest finished minute at `now`.
    func newest(at now: Date) -> Int64 {
        Int64(((now.timeIntervalSince1970 - delaySeconds) / 60).rounded(.down)) - 1
    }

    /// When the minute after `minute` becomes finished.
    func nextDeadline(after minute: Int64) -> Date {
        Date(timeIntervalSince1970: Double(minute + 2) * 60 + delaySeconds)
    }
}
