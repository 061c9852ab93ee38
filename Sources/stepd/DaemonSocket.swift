import Foundation
import Logging
import StepProtocol

/// Picks where to listen when `--socket` is not given: the system path when this process may create it
/// (root, or the `stepd` user under systemd's RuntimeDirectory), else the first per-user place that works.
enum DaemonSocket {
    static func choose(logger: Logger) throws -> String {
        var refused: [String] = []
        for path in SocketPath.candidates {
            let directory = (path as NSString).deletingLastPathComponent
            if path == SocketPath.system {
                if !FileManager.default.fileExists(atPath: directory) {
                    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                             attributes: [.posixPermissions: 0o755])
                }
                if access(directory, W_OK | X_OK) == 0 { return path }
                continue
            }
            // A per-user folder is the user's own or is not used (SocketPath): never one another user made.
            if let problem = SocketPath.preparePrivateFolder(of: path) {
                logger.warning("not listening in \(directory): \(problem)")
                refused.append(problem)
                continue
            }
            logger.notice("\((SocketPath.system as NSString).deletingLastPathComponent) is not writable; using \(path)")
            return path
        }
        let reasons = refused.isEmpty ? "" : " (" + refused.joined(separator: "; ") + ")"
        throw StartFailure(description: "no place for the socket that only this user can write\(reasons); pass --socket PATH",
                           status: .cantCreate)
    }
}
