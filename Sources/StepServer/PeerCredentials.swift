import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a Unix socket, as the kernel recorded it when the client connected: SO_PEERCRED's
/// pid, uid and gid and SO_PEERGROUPS' supplementary groups. Taken once, at accept, and never looked up again
/// by PID: a PID can be reused by another process (issue 14, item 7), the socket's credentials cannot.
package struct PeerCredentials: Sendable, Equatable {
    var pid: pid_t
    var uid: uid_t
    var gid: gid_t
    /// The supplementary groups, with the primary group.
    var groups: Set<gid_t>

    /// Reads the credentials of a connected Unix socket; nil for a channel without one (never on this server).
    /// Must run on the channel's event loop.
    static func of(_ channel: Channel) -> PeerCredentials? {
        let found: PeerCredentials?? = try? channel.pipeline.syncOperations.withUnsafeTransportIfAvailable(
            of: NIOBSDSocket.Handle.self) { (fd: NIOBSDSocket.Handle) -> PeerCredentials? in
            PeerCredentials.ofSocket(fd)
        }
        return found ?? nil
    }

    /// The credentials of a connected Unix socket descriptor.
    static func ofSocket(_ fd: CInt) -> PeerCredentials? {
        var cred = KernelUcred()
        var length = socklen_t(MemoryLayout<KernelUcred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else { return nil }
        var groups: Set<gid_t> = [cred.gid]
        groups.formUnion(supplementaryGroups(fd: fd))
        return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid, groups: groups)
    }

    /// SO_PEERGROUPS (Linux 4.13): the kernel says how much room it needs when the buffer is too small.
    private static func supplementaryGroups(fd: CInt) -> [gid_t] {
        var capacity = 64
        while capacity <= 65_536 {  // NGROUPS_MAX
            var buffer = [gid_t](repeating: 0, count: capacity)
            var length = socklen_t(capacity * MemoryLayout<gid_t>.size)
            if getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, &buffer, &length) == 0 {
                return Array(buffer.prefix(Int(length) / MemoryLayout<gid_t>.size))
            }
            guard errno == ERANGE else { return [] }
            capacity = max(capacity * 2, Int(length) / MemoryLayout<gid_t>.size)
        }
        return []
    }

    /// Linux's `struct ucred` (glibc hides it behind _GNU_SOURCE): the same three fields in the same order.
    package struct KernelUcred {
        package var pid: pid_t = 0
        package var uid: uid_t = 0
        package var gid: gid_t = 0

        package init() {}
    }

    var description: String { "uid \(uid), pid \(pid)" }
}

/// Who may change state (`reset`): root, the daemon's own user, or members of the configured admin group, as the
/// socket's credentials say. The connection slots kept back are root's alone (ProtocolServer.clientConnected).
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
