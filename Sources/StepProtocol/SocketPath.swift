import Foundation

/// Where the daemon listens when no `--socket` is given, and where clients look for it.
///
/// The system place is /run/stepd/stepd.sock (systemd's RuntimeDirectory). A user running the daemon by
/// hand cannot create that, so the daemon falls back to $XDG_RUNTIME_DIR, then to a folder of its own in /tmp.
/// A per-user folder is used, by the daemon and by clients, only when it is the user's own as ssh-agent and tmux
/// want theirs: a directory (not a link), owned by the user, mode 0700. Anyone can make /tmp/stepd-UID first, and
/// a folder another user can write lets them put their own socket in place of the daemon's.
public enum SocketPath {
    public static let system = "/run/stepd/stepd.sock"

    public static var candidates: [String] {
        var paths = [system]
        if let runtime = runtimeDirectory { paths.append(runtime + "/stepd/stepd.sock") }
        paths.append("/tmp/stepd-\(getuid())/stepd.sock")
        return paths
    }

    private static var runtimeDirectory: String? {
        guard let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return nil }
        return runtime
    }

    /// For clients: $STEPD_SOCKET, else the first candidate that exists in a folder that may be trusted. A
    /// per-user folder that exists but may not be trusted is skipped, and why is passed to `refused`.
    public static func forClient(refused: (String) -> Void = { _ in }) -> String {
        if let env = ProcessInfo.processInfo.environment["STEPD_SOCKET"], !env.isEmpty { return env }
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            if path != system, let problem = untrustedFolder(of: path) {
                refused("not using \(path): \(problem)")
                continue
            }
            return path
        }
        return system
    }

    /// Why the per-user folders holding `socket` may not be trusted, or nil when they are the user's own: the
    /// socket's folder and, for one under $XDG_RUNTIME_DIR, that folder too.
    public static func untrustedFolder(of socket: String, uid: uid_t = getuid()) -> String? {
        let folder = (socket as NSString).deletingLastPathComponent
        if let runtime = runtimeDirectory, folder.hasPrefix(runtime + "/"), let problem = privateFolderProblem(runtime, uid: uid) {
            return problem
        }
        return privateFolderProblem(folder, uid: uid)
    }

    /// Why `path` is not a private folder of `uid` (a directory, not a link, owned by it, mode 0700 or
    /// stricter), or nil when it is.
    public static func privateFolderProblem(_ path: String, uid: uid_t = getuid()) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(path) is not a directory (a link or a file)" }
        guard info.st_uid == uid else {
            return "\(path) belongs to uid \(info.st_uid), not to uid \(uid); someone else made it, and could replace the socket"
        }
        guard info.st_mode & 0o077 == 0 else {
            return "\(path) has mode \(String(info.st_mode & 0o7777, radix: 8)), not 0700: other users could replace the socket"
        }
        return nil
    }

    /// For the daemon: makes the per-user folder of `socket` (mode 0700, its parent must exist) unless it
    /// exists, and returns why it may not be used, or nil when it is the user's own. A folder of the user's
    /// own with a wider mode (an older stepd made it 0755) is narrowed to 0700 first.
    public static func preparePrivateFolder(of socket: String) -> String? {
        let folder = (socket as NSString).deletingLastPathComponent
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            return "cannot create \(folder): \(String(cString: strerror(errno)))"
        }
        var info = stat()
        if lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o077 != 0 {
            _ = chmod(folder, 0o700)
        }
        return untrustedFolder(of: socket)
    }
}
