import Foundation

/// The real recording bundled with stepd, played by `stepd --demo` (and so by `make run`).
enum DefaultRecording {
    static let fileName = "walk-inhand.csv.gz"

    /// Where it may be, first match wins: $STEPD_DATA_DIR, the installed share/stepd, the source tree's data/.
    static func candidates() -> [String] {
        var directories: [String] = []
        if let dir = ProcessInfo.processInfo.environment["STEPD_DATA_DIR"] { directories.append(dir) }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let prefix = executable.deletingLastPathComponent().deletingLastPathComponent()
        directories.append(prefix.appendingPathComponent("share/stepd").path)
        // Run from a build folder of the source tree: .build/<config>/stepd → data/.
        directories.append(prefix.deletingLastPathComponent().appendingPathComponent("data").path)
        directories.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("data").path)
        return directories.map { $0 + "/" + fileName }
    }
}
