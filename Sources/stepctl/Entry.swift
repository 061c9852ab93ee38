import Foundation

/// stepctl's entry, called by the one program (Sources/stepd/MultiCall.swift) when it runs as `stepctl`.
public enum StepctlEntry {
    public static func main() -> Never {
        StepCtl.main()
        exit(0)
    }
}
