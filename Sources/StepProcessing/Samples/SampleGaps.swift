/// Scans a device's buffer lost, told from the gaps in its time stamps.
///
/// An IIO buffer that fills while its reader is held up (a starved thread on a busy board, a daemon stopped
/// with SIGSTOP) drops the scans that come next, as the kernel's kfifo does: the reader then finds a gap in
/// the time stamps as long as the buffer stayed full, and the scans after it evenly spaced again. A device
/// whose scans arrive late (a stalled bus, a HID sensor stamped on arrival) shows a gap too, but the late
/// scans follow it packed closer than a period, and they make it up. So a gap of g periods owes g - 1 scans,
/// each interval shorter than half a period pays one of them back, and what is still owed once the device
/// has kept its pace for `settleSeconds` is lost. A clock that drifts by a few percent, or jitters by less
/// than half a period, owes nothing.
public struct SampleGapCounter: Sendable {
    /// Scans found lost, and between which two stamps (the first gap's start and the last gap's end).
    public struct Loss: Equatable, Sendable {
        public var scans: Int
        public var from: Double
        public var to: Double
    }

    public let periodSeconds: Double
    /// How long the stamps must keep the device's pace after a gap before what it owes counts as lost:
    /// longer than a burst of late scans takes to drain (a refill or two).
    public let settleSeconds: Double
    /// Scans lost since the counter was made.
    public private(set) var lost = 0
    private var owed = 0
    private var owedSince: Double?
    private var owedFrom = 0.0
    private var last: Double?

    public init(rateHz: Double, settleSeconds: Double = 2) {
        periodSeconds = 1 / rateHz
        self.settleSeconds = settleSeconds
    }

    /// The next scan's time (seconds): the scans this one shows lost, nil mostly.
    public mutating func add(time: Double) -> Loss? {
        defer { last = time }
        guard let last, time.isFinite, last.isFinite else { return nil }
        let interval = time - last
        if interval > 1.5 * periodSeconds {
            // At most an hour of scans: a stamp that jumps further is a clock reset, not a gap to count.
            let periods = min(interval / periodSeconds, 3600 / periodSeconds)
            if owed == 0 { owedFrom = last }
            owed += Int(periods.rounded()) - 1
            owedSince = time
        } else if interval < 0.5 * periodSeconds, owed > 0 {
            owed -= 1
        }
        guard let since = owedSince, time - since >= settleSeconds else { return nil }
        return settle()
    }

    /// A new buffer starts a new stream: a gap across it is the reader's own doing (the buffer made again),
    /// not the device's, and is not counted; what was owed before it is settled now.
    public mutating func restart() -> Loss? {
        defer { last = nil }
        return settle()
    }

    private mutating func settle() -> Loss? {
        defer { owed = 0; owedSince = nil }
        guard owed > 0, let to = owedSince else { return nil }
        lost += owed
        return Loss(scans: owed, from: owedFrom, to: to)
    }
}
