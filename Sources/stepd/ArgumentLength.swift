import ArgumentParser
import Foundation
import StepProtocol
import StepService

extension Stepd {
    /// Refuses an argument longer than any value stepd takes before ArgumentParser sees it: ArgumentParser's
    /// own message for a refused value repeats the value whole ("The value '…' is invalid"), a megabyte on the
    /// terminal or in the journal. Said in stepd.conf's words, with the flag, and exit status 64.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let limit = ConfigOption.Kind.maximumTextBytes
        if let index = arguments.firstIndex(where: { $0.utf8.count > limit }) {
            let argument = arguments[index]
            var name = "an argument"
            var value = argument
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else if index > 0, arguments[index - 1].hasPrefix("--") {
                name = arguments[index - 1]
            }
            let message = "stepd: \(name): expected at most \(limit) bytes, found \(ConfigError.quoted(value))\n"
            FileHandle.standardError.write(Data(message.utf8))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        if let help = topLevelHelp(arguments) { return print(help) }
        // `stepd analyse x` would reach `run` (the default command) as an unexpected argument.
        let commands = configuration.subcommands.map { $0._commandName }
        if let first = arguments.first, let message = CommandSuggestion.message(program: "stepd", word: first, commands: commands) {
            FileHandle.standardError.write(Data((message + "\n").utf8))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        main(nil)
    }
}
