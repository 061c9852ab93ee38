/// The documentation of the daemon's options, written from `ConfigOption.all` so that it cannot drift:
/// docs/configuration.md's table, docs/stepd.conf.example and stepd(8)'s OPTIONS. `stepd options
/// --update-docs` rewrites them; ConfigFileTests fails when the committed files differ from this.
public enum OptionDocs {
    /// Where each generated part goes: a file of the repository, and the lines that fence the part (nil:
    /// the whole file).
    public struct Part: Sendable {
        public let file: String
        public let begin: String?
        public let end: String?
        public let text: @Sendable () -> String
    }

    public static let parts: [Part] = [
        Part(file: "docs/configuration.md",
             begin: "<!-- BEGIN options: generated from ConfigOption.swift by `stepd options --update-docs` -->",
             end: "<!-- END options -->", text: { markdownTable() }),
        Part(file: "docs/man/stepd.8",
             begin: #".\" BEGIN options: generated from ConfigOption.swift by stepd options --update-docs"#,
             end: #".\" END options"#, text: { manOptions() }),
        Part(file: "docs/stepd.conf.example", begin: nil, end: nil, text: { configurationExample() }),
    ]

    /// `text` with the fenced part replaced by `part`'s text, or nil when the fences are missing.
    public static func splice(_ part: Part, into text: String) -> String? {
        guard let begin = part.begin, let end = part.end else { return part.text() }
        guard let start = text.range(of: begin + "\n"), let stop = text.range(of: end, range: start.upperBound..<text.endIndex)
        else { return nil }
        return String(text[..<start.upperBound]) + part.text() + String(text[stop.lowerBound...])
    }

    // MARK: docs/configuration.md

    public static func markdownTable() -> String {
        var lines = ["| key | flag | default | meaning |", "|---|---|---|---|"]
        for option in ConfigOption.all {
            let meaning = [option.help, option.details, allowed(option)].compactMap { $0 }.joined(separator: " ")
            lines.append("| `\(option.key)` | `\(usage(option))` | \(shownDefault(option)) | \(meaning) |")
        }
        lines.append("")
        lines.append("Only on the command line: " + ConfigOption.commandLineOnly.map { option in
            "`\(usage(option))` (\(option.help.dropLast()); default \(shownDefault(option)))"
        }.joined(separator: "; ") + ".")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `--height M`, `--loop`.
    static func usage(_ option: ConfigOption) -> String {
        if case .flag = option.kind { return "--" + option.flagName }
        return "--\(option.flagName) \(option.valueName.uppercased())"
    }

    static func shownDefault(_ option: ConfigOption) -> String {
        option.defaultText.hasPrefix("(") ? option.defaultText : "`\(option.defaultText)`"
    }

    /// The values an option takes, as a sentence; nil for free text.
    static func allowed(_ option: ConfigOption) -> String? {
        switch option.kind {
        case .path: return nil
        case .socketPath:
            return "At most \(ConfigOption.Kind.maximumSocketPathBytes) bytes: a Unix socket's address holds no more."
        case .choice(let choices): return "One of " + choices.map { "`\($0)`" }.joined(separator: ", ") + "."
        case .integer(let r): return "A whole number from \(r.lowerBound) to \(r.upperBound)."
        case .number(let r):
            return "From \(ConfigOption.Kind.format(r.lowerBound)) to \(ConfigOption.Kind.format(r.upperBound))."
        case .flag: return "In the file `true` or `false` (also yes/no, on/off, 1/0)."
        case .address: return nil
        case .deviceName: return "Not a path: a `/` is refused (`--list-devices` shows the names and labels)."
        }
    }

    // MARK: stepd(8)

    public static func manOptions() -> String {
        var lines: [String] = []
        for option in ConfigOption.commandLineOnly + ConfigOption.all {
            lines.append(".TP")
            if case .flag = option.kind {
                lines.append(".B \\-\\-" + roffName(option.flagName))
            } else {
                lines.append(".BI \\-\\-\(roffName(option.flagName)) \" \(option.valueName)\"")
            }
            let inFile = ConfigOption.all.contains { $0.key == option.key }
            let values = option.kind.isFlag ? (inFile ? "In stepd.conf: `\(option.key) = true`." : nil) : allowed(option)
            var sentence = [option.help, option.details.map(roff), values.map(roff)].compactMap { $0 }
                .joined(separator: " ")
            if !option.defaultText.hasPrefix("(") && option.kind.isValued {
                sentence += " Default: \(roff("`" + option.defaultText + "`"))."
            }
            lines.append(roffLine(sentence))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func roffName(_ name: String) -> String { name.replacingOccurrences(of: "-", with: "\\-") }

    /// Markdown's `code` and [links](x) in roff: bold code, the link's text.
    static func roff(_ markdown: String) -> String {
        // roff's own escapes for a backslash and the one non-ASCII sign the help uses.
        var text = markdown.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "×", with: "\\(mu")
        while let open = text.range(of: "["), let middle = text.range(of: "](", range: open.upperBound..<text.endIndex),
              let close = text.range(of: ")", range: middle.upperBound..<text.endIndex) {
            text.replaceSubrange(open.lowerBound..<close.upperBound, with: text[open.upperBound..<middle.lowerBound])
        }
        var result = ""
        var inCode = false
        for character in text {
            if character == "`" {
                result += inCode ? "\\fR" : "\\fB"
                inCode.toggle()
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// A text line that roff will not take for a request.
    static func roffLine(_ text: String) -> String {
        text.hasPrefix(".") || text.hasPrefix("'") ? "\\&" + text : text
    }

    // MARK: docs/stepd.conf.example

    public static func configurationExample() -> String {
        var lines = [
            "# /etc/stepd/stepd.conf: stepd's configuration. Every line is \"key = value\"; \"#\" starts a comment line.",
            "# Each key is also a command-line flag (state_dir -> --state-dir), and a flag given to stepd wins.",
            "# The values shown are the defaults (or, for an option without one, an example); see",
            "# docs/configuration.md or stepd(8). Generated from ConfigOption.swift by `stepd options --update-docs`.",
        ]
        for option in ConfigOption.all {
            lines.append("")
            var comment = option.help
            if let allowed = allowed(option), !(option.kind.isFlag) { comment += " " + allowed.replacingOccurrences(of: "`", with: "") }
            lines.append("# " + comment)
            let value = option.defaultText.hasPrefix("(") ? (option.example ?? "") : option.defaultText
            lines.append("#\(option.key) = \(value)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ConfigOption.Kind {
    var isFlag: Bool {
        if case .flag = self { return true }
        return false
    }

    /// Whether the option takes a value (everything but a flag).
    var isValued: Bool { !isFlag }
}
