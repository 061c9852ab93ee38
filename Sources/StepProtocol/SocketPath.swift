import Foundation

/// Where the daemon listens when no `--socket` is given, and where clients look for it.
///
/// The system place is /run/stepd/stepd.sock (systemd's RuntimeDirectory). A user running the daemon by
/// hand cannot create that, so the daemon falls back to $XDG_RUNTIME_DIR, then to a folder of its own in /tmp.
public enum SocketPath {
    public static let system = "/run/stepd/stepd.sock"

    public static var candidates: [String] {
        var paths = [system]
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            paths.append(runtime + "/stepd/stepd.sock")
        }
        paths.append("/tmp/stepd-\(getuid())/stepd.sock")
        return paths
    }

    /// For clients: $STEPD_SOCKET, else the first candidate that exists.
    public static func forClient() -> String {
        if let env = ProcessInfo.processInfo.environment["STEPD_SOCKET"], !env.isEmpty { return env }
        return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? system
    }
}
