extension Int {
    /// `self + other`, held at Int's bounds instead of trapping. Counts read back from a store are checked
    /// against their range first (StoreRanges); this keeps a count that could still reach the bound (a
    /// saved count added to this run's, a step on top of it) from stopping the daemon with SIGILL.
    public func addingSaturated(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
