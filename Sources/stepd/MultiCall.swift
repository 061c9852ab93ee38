import Foundation
import StepctlCommands
import StepdWebCommands

/// One program for the three (as busybox is): `stepctl` and `stepd-web` are links to `stepd`, and the name it
/// is called by says which runs. Swift's runtime and Foundation, with ICU's data, are then on disk once
/// (docs/service.md, "The Debian package"); a page of the clients' code is read only when a client runs.
@main
enum MultiCall {
    static func main() {
        switch program(calledAs: CommandLine.arguments.first ?? "stepd") {
        case "stepctl": StepctlEntry.main()
        case "stepd-web": StepdWebEntry.main()
        default: Stepd.main()
        }
    }

    /// The last component of argv[0]: `/usr/bin/stepctl`, `./stepctl` and `stepctl` are all stepctl.
    static func program(calledAs argument: String) -> String {
        String(argument.split(separator: "/").last ?? "stepd")
    }
}
