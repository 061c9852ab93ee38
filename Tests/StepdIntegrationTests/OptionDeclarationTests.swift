import Foundation
import XCTest

/// `stepd run`'s flags, as the built binary's ArgumentParser describes them (--experimental-dump-help),
/// equal the declarations the docs are generated from (docs/configuration.md's table, itself checked
/// against ConfigOption.all by ConfigFileTests); the man pages list every subcommand and flag; and docs/web.md's
/// option table is stepd-web's --help.
final class OptionDeclarationTests: XCTestCase {
    struct Argument {
        var name: String
        var abstract: String
        var defaultValue: String?
        /// "option" (takes a value) or "flag".
        var kind: String = "option"
        var valueName: String?
    }

    struct Command {
        var name: String
        var arguments: [Argument]
        var subcommands: [Command]
    }

    private func dump(_ binary: String) throws -> Command {
        let result = try runCommand(binary, ["--experimental-dump-help"], timeout: 30)
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return try command(XCTUnwrap(object["command"] as? [String: Any]))
    }

    private func command(_ object: [String: Any]) -> Command {
        let arguments = (object["arguments"] as? [[String: Any]] ?? []).compactMap { argument -> Argument? in
            guard argument["shouldDisplay"] as? Bool ?? true,
                  let long = (argument["names"] as? [[String: Any]])?.first(where: { $0["kind"] as? String == "long" })?["name"] as? String
            else { return nil }
            return Argument(name: long, abstract: argument["abstract"] as? String ?? "", defaultValue: argument["defaultValue"] as? String,
                            kind: argument["kind"] as? String ?? "option", valueName: argument["valueName"] as? String)
        }
        let subcommands = (object["subcommands"] as? [[String: Any]] ?? []).filter { $0["shouldDisplay"] as? Bool ?? true }.map(command)
        return Command(name: object["commandName"] as? String ?? "", arguments: arguments, subcommands: subcommands)
    }

    /// docs/configuration.md's generated rows: flag → (default, meaning).
    private func documentedFlags() throws -> [String: (defaultText: String, meaning: String)] {
        let text = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var flags: [String: (String, String)] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 4, cells[1].hasPrefix("`--") else { continue }
            let flag = String(cells[1].dropFirst(3).prefix { $0 != " " && $0 != "`" })
            flags[flag] = (cells[2].trimmingCharacters(in: ["`"]), cells[3])
        }
        for match in text.matches(of: #/`--([a-z-]+)[^`]*` \((.*?); default `?([^`)]*)`?\)/#) {
            flags[String(match.1)] = (String(match.3), String(match.2))
        }
        return flags
    }

    func testRunFlagsAreExactlyTheDeclaredOptions() throws {
        let root = try dump(Binaries.stepd)
        let run = try XCTUnwrap(root.subcommands.first { $0.name == "run" })
        let documented = try documentedFlags()
        let builtIn: Set = ["help", "version"]
        let flags = run.arguments.filter { !builtIn.contains($0.name) }
        XCTAssertEqual(Set(flags.map(\.name)), Set(documented.keys),
                       "stepd run's flags and ConfigOption's declarations differ: declare each option once in ConfigOption.all and read it with @Option(.named(...))")
        for flag in flags {
            guard let doc = documented[flag.name] else { continue }
            let help = flag.abstract.replacingOccurrences(of: #" \(default: [^)]*\)$"#, with: "", options: .regularExpression)
            XCTAssertTrue(doc.meaning.hasPrefix(help.hasSuffix(".") ? String(help.dropLast()) : help),
                          "--\(flag.name): help \"\(help)\" is not the declaration's \"\(doc.meaning)\"")
            let shown = flag.abstract.firstMatch(of: #/\(default: ([^)]*)\)$/#).map { String($0.1) }
            if let shown, !doc.defaultText.hasPrefix("(") {
                XCTAssertEqual(shown, doc.defaultText, "--\(flag.name): --help's default differs from the docs'")
            }
        }
    }

    /// docs/web.md's option table says what `stepd-web --help` says: the same options, each with its value's
    /// name and its default.
    func testWebOptionTableIsStepdWebsHelp() throws {
        let text = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/web.md"), encoding: .utf8)
        let table = try XCTUnwrap(text.components(separatedBy: "## Options").dropFirst().first?.components(separatedBy: "\n## ").first)
        var documented: [String: (valueName: String?, defaultText: String)] = [:]
        for line in table.split(separator: "\n") where line.hasPrefix("| `--") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let words = cells[1].trimmingCharacters(in: ["`"]).split(separator: " ", maxSplits: 1).map(String.init)
            documented[String(words[0].dropFirst(2))] = (words.count > 1 ? words[1] : nil, cells[2].trimmingCharacters(in: ["`"]))
        }
        let help = try dump(Binaries.stepdWeb).arguments.filter { $0.name != "help" }
        XCTAssertEqual(Set(help.map(\.name)), Set(documented.keys), "stepd-web --help's options and docs/web.md's table differ")
        for argument in help {
            guard let doc = documented[argument.name] else { continue }
            guard argument.kind == "option" else {
                XCTAssertNil(doc.valueName, "--\(argument.name) is a flag: it takes no value")
                continue
            }
            XCTAssertEqual(doc.valueName?.lowercased(), argument.valueName?.lowercased(), "--\(argument.name)'s value")
            guard let shown = argument.defaultValue else { continue }  // no fixed default: the docs explain it
            if let number = Double(shown) {
                XCTAssertEqual(Double(doc.defaultText), number, "--\(argument.name)'s default: --help \(shown), docs \(doc.defaultText)")
            } else {
                XCTAssertEqual(doc.defaultText, shown, "--\(argument.name)'s default")
            }
        }
    }

    func testManPagesListEverySubcommandAndFlag() throws {
        for (binary, page) in [(Binaries.stepd, "docs/man/stepd.8"), (Binaries.stepctl, "docs/man/stepctl.1"),
                               (Binaries.stepdWeb, "docs/man/stepd-web.1")] {
            let text = try String(contentsOf: Binaries.repository.appendingPathComponent(page), encoding: .utf8)
            let root = try dump(binary)
            for argument in root.arguments {
                XCTAssertTrue(text.contains("\\-\\-" + argument.name.replacingOccurrences(of: "-", with: "\\-")),
                              "\(page) lacks --\(argument.name)")
            }
            for subcommand in root.subcommands where subcommand.name != "help" {
                XCTAssertTrue(text.contains(".B \(subcommand.name)") || text.contains(".BR \(subcommand.name) ")
                              || text.contains(".BI \"\(subcommand.name) ") || text.contains(".B \(root.name) \(subcommand.name)"),
                              "\(page) lacks the command \(subcommand.name)")
                for argument in subcommand.arguments {
                    XCTAssertTrue(text.contains("\\-\\-" + argument.name.replacingOccurrences(of: "-", with: "\\-")),
                                  "\(page) lacks \(subcommand.name) --\(argument.name)")
                }
            }
        }
    }

    /// Where stepd(8) sends a reader for the pressure file's format, that format is: the first page named after
    /// `walk.pressure.csv` documents its `t,p_kpa` header (it once named docs/analysis.md, which does not). The
    /// man page names it where the package installs it, /usr/share/doc/stepd/ (debian/stepd.docs: docs/*.md).
    func testTheManPageNamesThePageWithThePressureFileFormat() throws {
        let text = try String(contentsOf: Binaries.repository.appendingPathComponent("docs/man/stepd.8"), encoding: .utf8)
        let mention = try XCTUnwrap(text.range(of: "walk.pressure.csv"), "stepd(8) mentions the pressure file")
        let named = try XCTUnwrap(text.range(of: #"/usr/share/doc/stepd/[a-z-]+\.md"#, options: .regularExpression, range: mention.upperBound..<text.endIndex))
        let file = "docs/" + String(text[named].dropFirst("/usr/share/doc/stepd/".count))
        let page = try String(contentsOf: Binaries.repository.appendingPathComponent(file), encoding: .utf8)
        XCTAssertTrue(page.contains("t,p_kpa\n"), "\(file) does not document the t,p_kpa format")
    }
}
