import ArgumentParser
import Foundation
import StepProtocol

@main
struct StepCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stepctl",
        abstract: "Query and control the stepd daemon.",
        version: "0.1.0",
        subcommands: [Status.self, Steps.self, Reset.self, Watch.self, Graph.self, Summary.self, History.self,
                      Position.self, Track.self, Visits.self])
}

/// Options every subcommand takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The daemon's socket (default: $STEPD_SOCKET, else the first of \(SocketPath.candidates.joined(separator: ", ")) that exists).")
    var socket: String?

    @Flag(help: "Print the daemon's JSON as is, for scripts.")
    var json = false

    func connect() throws -> Client {
        try Client(path: socket ?? SocketPath.forClient())
    }
}

/// Prints one line to stdout and flushes, so pipes see it at once.
func emit(_ line: String) {
    print(line)
    fflush(stdout)
}

func number(_ value: Any?, decimals: Int = 1) -> String {
    guard let n = value as? Double ?? (value as? Int).map(Double.init) else { return "-" }
    return String(format: "%.\(decimals)f", n)
}

func exitOnError<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as ClientError {
        FileHandle.standardError.write(Data("stepctl: \(error)\n".utf8))
        throw ExitCode(69)  // EX_UNAVAILABLE
    }
}
