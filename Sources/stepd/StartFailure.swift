import ArgumentParser
import Foundation
import StepAcquisition
import StepProtocol
import StepServer
import StepService

/// Why the daemon cannot start, as one sentence a person can act on and the exit status (sysexits.h,
/// docs/configuration.md "Exit status") that tells a script or systemd the cause.
struct StartFailure: Error, CustomStringConvertible {
    let description: String
    let status: ExitStatus

    /// Prints "stepd: <reason>" to stderr and gives the ExitCode that ends the process with the status.
    func exit() -> ExitCode {
        FileHandle.standardError.write(Data("stepd: \(description)\n".utf8))
        return ExitCode(status.rawValue)
    }

    /// A socket in use is another daemon's (75, worth retrying later); anything else about the socket is
    /// a place the daemon cannot create (73).
    static func serving(_ error: Error) -> StartFailure {
        switch error {
        case ServerError.socketInUse: return StartFailure(description: "\(error)", status: .tempFail)
        default: return StartFailure(description: "\(error)", status: .cantCreate)
        }
    }
}
