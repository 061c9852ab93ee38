/// What a command line with an unknown first word gets instead of ArgumentParser's "Unexpected argument":
/// the command it most likely meant, as git's "The most similar command is" and the config file's "did you
/// mean" do, or the list of commands. Used by stepd and stepctl before ArgumentParser parses.
public enum CommandSuggestion {
    /// The message for `word` when it is no command of `commands` and looks like one was meant (not an option,
    /// not a path or value: those are ArgumentParser's to judge); nil when the word is a command or an option.
    public static func message(program: String, word: String, commands: [String]) -> String? {
        guard !word.hasPrefix("-"), !commands.contains(word), word != "help",
              word.count <= 64, word.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) else { return nil }
        let help = "\(program) --help lists them"
        if let near = nearest(to: word, in: commands) {
            return "\(program): unknown command \"\(word)\"; did you mean \"\(near)\"? (\(help))"
        }
        return "\(program): unknown command \"\(word)\"; the commands are \(commands.joined(separator: ", ")) (\(help))"
    }

    /// The command a letter or two off (`stpes`, `analyse`), or the only one it starts (`hist`) when the word has
    /// at least `prefixFrom` letters. stepd.conf's "did you mean" for keys uses it too.
    public static func nearest(to word: String, in commands: [String], prefixFrom: Int = 3) -> String? {
        let typed = word.lowercased()
        if let same = commands.first(where: { $0 == typed }) { return same }
        let allowed = typed.count <= 4 ? 1 : 2
        let scored = commands.map { (name: $0, distance: editDistance(typed, $0)) }.filter { $0.distance <= allowed }
        if let best = scored.min(by: { $0.distance < $1.distance }) { return best.name }
        let extended = commands.filter { typed.count >= prefixFrom && $0.hasPrefix(typed) }
        return extended.count == 1 ? extended[0] : nil
    }

    /// Levenshtein distance, with a swap of two neighbours counting one (`stpes` is one slip from `steps`).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { best = min(best, table[i - 2][j - 2] + 1) }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
