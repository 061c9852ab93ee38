import Foundation

/// The real recording bundled with stepd, replayed when no sensor is present so a newcomer sees steps at once.
enum DefaultRecording {
    static let fileName = "walk-inhand.csv.gz"

    static func locate() -> String? {
        var candidates: [String] = []
        if let dir = ProcessInfo.processInfo.environment["STEPD_DATA_DIR"] { candidates.append(dir) }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let prefix = executable.deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(prefix.appendingPathComponent("share/stepd").path)
        // Run from a build folder of the source tree: .build/<config>/stepd → data/.
        candidates.append(prefix.deletingLastPathComponent().appendingPathComponent("data").path)
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("data").path)
        return candidates.map { $0 + "/" + fileName }.first { FileManager.default.isReadableFile(atPath: $0) }
    }
}
