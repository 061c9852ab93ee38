import ArgumentParser
import Foundation
import StepService

/// The daemon's service options: where its configuration and history live.
struct ServiceOptions: ParsableArguments {
    @Option(.named("config")) var config: String?
    @Option(.named("state_dir")) var stateDir: String?
    @Option(.named("retention_days")) var retentionDays: Int

    /// systemd's StateDirectory= (it sets $STATE_DIRECTORY), else /var/lib/stepd when this process may write
    /// there, else a per-user place, as the socket falls back for a daemon started by hand.
    var stateDirectory: String {
        if let stateDir { return stateDir }
        let environment = ProcessInfo.processInfo.environment
        if let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first { return String(systemd) }
        let system = ConfigOption.defaultStateDirectory
        let parent = (system as NSString).deletingLastPathComponent
        if access(system, W_OK | X_OK) == 0 || (!FileManager.default.fileExists(atPath: system) && access(parent, W_OK) == 0) {
            return system
        }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/stepd" }
        return NSHomeDirectory() + "/.local/state/stepd"
    }
}

extension Run {
    /// Merges stepd.conf under the command line: each `key = value` becomes `--key value` (`loop = true`
    /// becomes `--loop`) placed before the real arguments, and the whole is parsed again, so a flag given on
    /// the command line wins (the last value of an option counts). A bad file is reported with its file,
    /// line and key, and stepd exits with EX_CONFIG (78), or EX_NOINPUT (66) for a file it cannot read; stepd.service
    /// restarts on neither.
    mutating func applyConfigurationFile() throws {
        let path = service.config ?? ConfigOption.defaultPath
        let file: ConfigFile
        do {
            file = try ConfigFile.load(path: path, required: service.config != nil)
        } catch let error as ConfigError {
            throw StartFailure(description: error.description, status: error.exitStatus).exit()
        }
        guard !file.entries.isEmpty else { return }
        var arguments: [String] = []
        for (key, entry) in file.entries.sorted(by: { $0.value.line < $1.value.line }) {
            let flag = "--" + key.replacingOccurrences(of: "_", with: "-")
            switch entry.value {
            case .flag(true): arguments.append(flag)
            case .flag(false): break
            // --key=value, so that a value starting with "-" is not taken for a flag.
            case .string(let s): arguments.append("\(flag)=\(s)")
            case .integer(let n): arguments.append("\(flag)=\(n)")
            case .number(let x): arguments.append("\(flag)=\(x)")
            }
        }
        var commandLine = Array(CommandLine.arguments.dropFirst())
        if commandLine.first == "run" { commandLine.removeFirst() }
        do {
            self = try Run.parse(arguments + commandLine)
        } catch {
            // The command line alone parsed, so the file's values are at fault: name the key it complains of.
            let message = Run.message(for: error)
            let culprit = file.entries.sorted(by: { $0.value.line < $1.value.line }).first {
                message.contains("--" + $0.key.replacingOccurrences(of: "_", with: "-"))
            }
            let location = culprit.map { "\(path):\($0.value.line): key \"\($0.key)\": " } ?? "\(path): "
            throw StartFailure(description: location + message, status: .config).exit()
        }
    }
}
