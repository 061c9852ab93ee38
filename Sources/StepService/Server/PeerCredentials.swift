import Foundation
import NIOCore

/// Who is on the other end of a Unix socket, from SO_PEERCRED, with the groups the kernel reports for it.
struct PeerCredentials: Sendable {
    var pid: pid_t
    var uid: uid_t
    var gid: gid_t

    static func of(_ channel: Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        let future: EventLoopFuture<KernelUcred> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET),
                                                                           name: SocketOptionName(SO_PEERCRED))
        return future.map { Optional(PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid)) }
            .recover { _ in nil }
    }

    /// Linux's `struct ucred` (glibc hides it behind _GNU_SOURCE): the same three fields in the same order.
    struct KernelUcred: Sendable {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }

    /// The peer's supplementary groups, from /proc (SO_PEERCRED carries only the primary group).
    var groups: Set<gid_t> {
        var result: Set<gid_t> = [gid]
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return result }
        for line in status.split(separator: "\n") where line.hasPrefix("Groups:") {
            for field in line.dropFirst("Groups:".count).split(separator: " ") {
                if let g = gid_t(field.trimmingCharacters(in: .whitespaces)) { result.insert(g) }
            }
        }
        return result
    }
}

/// Who may change state (`reset`): root, the daemon's own user, or members of the configured admin group.
struct AccessPolicy: Sendable {
    var adminGroup: gid_t?

    func mayAdminister(_ peer: PeerCredentials?) -> Bool {
        guard let peer else { return false }
        if peer.uid == 0 || peer.uid == geteuid() { return true }
        if let group = adminGroup, peer.groups.contains(group) { return true }
        return false
    }

    /// Resolves a group name to its id; nil (and nobody beyond root and the daemon) if it does not exist.
    static func groupID(named name: String) -> gid_t? {
        guard let entry = getgrnam(name) else { return nil }
        return entry.pointee.gr_gid
    }
}
