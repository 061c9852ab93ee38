import ArgumentParser
import Foundation
import StepProtocol

struct StepCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stepctl",
        abstract: "Query and control the stepd daemon.",
        discussion: "Global options (--socket, --json) may come before or after the command.",
        version: stepdRelease,
        subcommands: [Status.self, Steps.self, Reset.self, Watch.self, Graph.self, Summary.self, History.self,
                      Position.self, Track.self, Visits.self])

    static func main() {
        // A daemon that closes the connection is an error to report (Client), never a SIGPIPE death.
        signal(SIGPIPE, SIG_IGN)
        refuseOverlongArguments()
        let commands = configuration.subcommands.compactMap { $0.configuration.commandName ?? defaultName(of: $0) }
        let arguments = GlobalOptions.movedAfterCommand(Array(CommandLine.arguments.dropFirst()), commands: commands)
        if let first = GlobalOptions.firstWord(arguments),
           let message = CommandSuggestion.message(program: "stepctl", word: first, commands: commands) {
            Output.error(message + "\n")
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        main(arguments)
    }

    /// No value stepctl takes is longer than PATH_MAX less its NUL. A longer argument is refused before
    /// ArgumentParser, whose message would repeat it whole, and before a message that names it (a socket path).
    static let maximumArgumentBytes = 4095

    private static func refuseOverlongArguments() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let index = arguments.firstIndex(where: { $0.utf8.count > maximumArgumentBytes }) else { return }
        let argument = arguments[index]
        var name = "an argument"
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            name = String(argument[..<equals])
        } else if index > 0, arguments[index - 1].hasPrefix("--") {
            name = arguments[index - 1]
        }
        Output.error("stepctl: \(name): expected at most \(maximumArgumentBytes) bytes, found \"\(argument.prefix(40))…\" "
                     + "(\(argument.utf8.count) bytes)\n")
        Foundation.exit(ExitStatus.usage.rawValue)
    }

    private static func defaultName(of command: ParsableCommand.Type) -> String {
        String(describing: command).lowercased()
    }
}

/// The options every command takes may be typed before the command, as the daemon's banner shows
/// (`stepctl --socket P steps`); ArgumentParser reads them only after it, so they are moved there.
enum GlobalOptions {
    static let withValue: Set<String> = ["--socket"]
    static let flags: Set<String> = ["--json"]

    static func movedAfterCommand(_ arguments: [String], commands: [String]) -> [String] {
        var moved: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if commands.contains(argument) {
                return [argument] + moved + arguments[(index + 1)...]
            }
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if flags.contains(argument) {
                moved.append(argument)
                index += 1
            } else if withValue.contains(name) {
                moved.append(argument)
                if !argument.contains("="), index + 1 < arguments.count {
                    moved.append(arguments[index + 1])
                    index += 1
                }
                index += 1
            } else {
                return arguments  // something else first (--help, a typo): ArgumentParser says what it thinks
            }
        }
        return arguments
    }

    /// The first argument that is neither a global option nor its value: the command, or what was typed for it.
    static func firstWord(_ arguments: [String]) -> String? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if flags.contains(argument) {
                index += 1
            } else if withValue.contains(name) {
                index += argument.contains("=") ? 1 : 2
            } else {
                return argument
            }
        }
        return nil
    }
}

/// Options every subcommand takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The daemon's socket (default: $STEPD_SOCKET, else the first of \(SocketPath.candidates.joined(separator: ", ")) that exists).")
    var socket: String?

    @Flag(help: "Print the daemon's JSON as is, for scripts.")
    var json = false

    func connect() throws -> Client {
        try Client(path: socket ?? SocketPath.forClient { Output.error("stepctl: \($0)\n") })
    }
}

/// Prints one line to stdout and flushes, so pipes see it at once (Output: a closed pipe ends stepctl quietly).
func emit(_ line: String) {
    Output.write(line + "\n")
}

/// "12.3", or "-" for a number the daemon did not send.
func number(_ value: Double?, decimals: Int = 1) -> String {
    guard let value else { return "-" }
    return String(format: "%.\(decimals)f", value)
}

/// Runs `body`; a failure to talk to the daemon, or its ERROR, is printed and becomes the exit status of the
/// table in stepctl(1): 69 no daemon or connection closed, 77 permission refused, 1 any other ERROR.
func exitOnError<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as ClientError {
        Output.error("stepctl: \(error)\n")
        throw ExitCode(error.exitStatus.rawValue)
    }
}

/// The daemon's time zone, which "today" and dates follow (STATUS `time_zone`, else its UTC offset).
func daemonTimeZone(_ client: Client) throws -> TimeZone {
    let status = try client.request(Request(command: .status), expecting: StatusMessage.self).reply
    if let name = status.time_zone, let zone = TimeZone(identifier: name) { return zone }
    if let offset = status.utc_offset_s, let zone = TimeZone(secondsFromGMT: offset) { return zone }
    return .current  // a daemon too old to say
}

/// A Gregorian calendar in the daemon's zone.
func calendar(in zone: TimeZone) -> Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    return calendar
}
