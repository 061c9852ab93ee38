import ArgumentParser
import StepProtocol

@main
struct Stepd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stepd",
        abstract: "Counts steps from an accelerometer, tracks position from gpsd, and serves both on a Unix socket.",
        version: stepdRelease,
        subcommands: [Run.self, Analyze.self, Bench.self, Options.self],
        defaultSubcommand: Run.self)
}
