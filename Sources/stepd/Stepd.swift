import ArgumentParser
import StepProtocol
import StepResearch

struct Stepd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stepd",
        abstract: "Counts steps from an accelerometer, tracks position from gpsd, and serves both on a Unix socket.",
        version: stepdRelease,
        subcommands: [Run.self, Analyze.self, Bench.self, Options.self],
        defaultSubcommand: Run.self)

    /// `stepd --help`: ArgumentParser's top-level help lists only the subcommands, and the daemon's options
    /// (what `stepd` with no subcommand takes) would hide under `stepd help run`. This is the top-level
    /// overview, then `run`'s usage and options as ArgumentParser writes them (so they are the declarations
    /// OptionDeclarationTests checks), then the subcommands. Nil for any other command line.
    static func topLevelHelp(_ arguments: [String]) -> String? {
        guard arguments == ["--help"] || arguments == ["-h"] else { return nil }
        let root = helpMessage(columns: nil)
        var run = helpMessage(for: Run.self, columns: nil)
        guard let usage = run.range(of: "USAGE: "), let subcommands = root.range(of: "SUBCOMMANDS:") else { return nil }
        run = String(run[usage.lowerBound...]).replacingOccurrences(of: "USAGE: stepd run ", with: "USAGE: stepd [run] ")
        let overview = "OVERVIEW: \(configuration.abstract)\n\n"
        return overview + run.trimmingTrailingNewlines() + "\n\n" + String(root[subcommands.lowerBound...])
    }
}

private extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
