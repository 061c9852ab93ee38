import Foundation
import Logging
import StepProtocol

/// Picks where to listen when `--socket` is not given: the system path when this process may create it
/// (root, or the `stepd` user under systemd's RuntimeDirectory), else the first per-user place that works.
enum DaemonSocket {
    static func choose(logger: Logger) throws -> String {
        for path in SocketPath.candidates {
            let directory = (path as NSString).deletingLastPathComponent
            if !FileManager.default.fileExists(atPath: directory) {
                try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o755])
            }
            if access(directory, W_OK | X_OK) == 0 {
                if path != SocketPath.system {
                    logger.notice("\((SocketPath.system as NSString).deletingLastPathComponent) is not writable; using \(path)")
                }
                return path
            }
        }
        throw StartFailure(description: "no writable place for the socket; pass --socket PATH", status: .cantCreate)
    }
}
