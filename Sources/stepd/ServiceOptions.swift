import ArgumentParser
import Foundation
import Logging
import StepProcessing
import StepService

/// The daemon's service options: where its configuration and history live.
struct ServiceOptions: ParsableArguments {
    @Option(help: "The configuration file (default \(ConfigOption.defaultPath); a missing default file is fine).")
    var config: String?

    @Option(help: "Where the history database lives (default \(ConfigOption.defaultStateDirectory), or $STATE_DIRECTORY under systemd).")
    var stateDir: String?

    @Option(help: "Prune history older than this many days (default \(ConfigOption.defaultRetentionDays)).")
    var retentionDays: Int?

    @Option(name: .customLong("stride-m"), help: "Stride length in metres for the distance estimate (default 0.70).")
    var strideMeters: Double?
}

/// Every run option after merging: a command-line flag wins over stepd.conf, which wins over the default.
struct DaemonSettings {
    var configPath: String
    var socket: String?
    var stateDirectory: String
    var retentionDays: Int
    var detector: StepDetectorKind
    var strideMeters: Double
    var replay: String?
    var speed: Double
    var loop: Bool
    var logLevel: Logger.Level

    /// Reads the configuration file. A bad file is reported on stderr with its file, line and key, and the
    /// process exits with EX_CONFIG (78), which stepd.service's RestartPreventExitStatus= does not restart.
    static func resolve(_ run: Run) throws -> DaemonSettings {
        let configPath = run.service.config ?? ConfigOption.defaultPath
        let file: ConfigFile
        do {
            file = try ConfigFile.load(path: configPath, required: run.service.config != nil)
        } catch let error as ConfigError {
            FileHandle.standardError.write(Data("stepd: \(error)\n".utf8))
            throw ExitCode(ConfigError.exitStatus)
        }
        let detectorName = run.detector ?? file.string("detector") ?? StepDetectorKind.default.rawValue
        guard let detector = StepDetectorKind(rawValue: detectorName) else {
            throw ValidationError("unknown detector '\(detectorName)'; known: \(StepDetectorKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let levelName = run.logLevel ?? file.string("log_level") ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("unknown log level '\(levelName)'; known: \(ConfigOption.logLevels.joined(separator: ", "))")
        }
        let speed = run.speed ?? file.number("speed") ?? 1
        guard speed > 0, speed.isFinite else { throw ValidationError("--speed must be a positive number") }
        let retention = run.service.retentionDays ?? file.integer("retention_days") ?? ConfigOption.defaultRetentionDays
        guard retention >= 1 else { throw ValidationError("--retention-days must be at least 1") }
        let stride = run.service.strideMeters ?? file.number("stride_m") ?? Engine.Configuration().strideMeters
        guard stride > 0, stride.isFinite else { throw ValidationError("--stride-m must be a positive number") }
        return DaemonSettings(
            configPath: configPath,
            socket: run.socket ?? file.string("socket"),
            stateDirectory: run.service.stateDir ?? file.string("state_dir") ?? defaultStateDirectory(),
            retentionDays: retention, detector: detector, strideMeters: stride,
            replay: run.replay ?? file.string("replay"), speed: speed,
            loop: run.loop ?? file.flag("loop") ?? false, logLevel: level)
    }

    /// systemd's StateDirectory= (it sets $STATE_DIRECTORY), else /var/lib/stepd when this process may write
    /// there, else a per-user place, as the socket falls back for a daemon started by hand.
    private static func defaultStateDirectory() -> String {
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
