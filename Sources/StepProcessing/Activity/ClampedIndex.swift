extension Int {
    /// `value` rounded down, held within ±2^62 (0 for NaN): a minute or a day index that no time, however
    /// corrupt, can trap (`Int(_:)` traps outside Int's range), with room left for `index + 1`. Readers refuse
    /// absurd times first (RecordingReader.maximumTimeSeconds); this keeps the arithmetic total regardless.
    public init(flooringClamped value: Double) {
        let down = value.rounded(.down)
        if down.isNaN {
            self = 0
        } else if down >= 0x1p62 {
            self = 1 << 62
        } else if down <= -0x1p62 {
            self = -(1 << 62)
        } else {
            self = Int(down)
        }
    }
}
