import ArgumentParser
import Foundation
import StepService

/// `stepd options`: the documentation of the daemon's options, written from their declarations
/// (ConfigOption.all). Hidden: it is for whoever adds an option, not for users.
struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print or update the option documentation generated from ConfigOption.all.",
        shouldDisplay: false)

    @Option(help: "Rewrite the generated parts of docs/configuration.md, docs/man/stepd.8 and docs/stepd.conf.example under this repository.")
    var updateDocs: String?

    func run() throws {
        guard let root = updateDocs else {
            for part in OptionDocs.parts { print("==> \(part.file) <==\n\(part.text())") }
            return
        }
        for part in OptionDocs.parts {
            let path = URL(fileURLWithPath: root).appendingPathComponent(part.file).path
            let current = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            guard let updated = OptionDocs.splice(part, into: current) else {
                throw ValidationError("\(path) lacks the lines \(part.begin ?? "") ... \(part.end ?? "") around its generated part")
            }
            if updated != current {
                try updated.write(toFile: path, atomically: true, encoding: .utf8)
                print("updated \(path)")
            }
        }
    }
}
