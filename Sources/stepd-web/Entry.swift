import Dispatch
import Foundation

/// stepd-web's entry, called by the one program (Sources/stepd/MultiCall.swift) when it runs as `stepd-web`.
public enum StepdWebEntry {
    /// What an `async` @main does: the command runs as a task on the main actor while the main queue is drained;
    /// ArgumentParser exits with the command's status on an error, and the program exits 0 when it returns.
    public static func main() -> Never {
        Task { @MainActor in
            await StepdWeb.main()
            exit(0)
        }
        dispatchMain()
    }
}
