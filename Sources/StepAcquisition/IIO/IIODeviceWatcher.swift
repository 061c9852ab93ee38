import CIIO
import Foundation
import Glibc
import Logging

/// Wakes an IIO source when its device (an accelerometer, a barometer) may have appeared, so that it waits for one instead of
/// looking every second. Three signals, each used when it can be had:
/// - inotify on /sys/bus/iio/devices: a device directory appearing where the tree is an ordinary file
///   system (a bind-mounted or tmpfs tree, as the tests build; real sysfs sends no events for new devices);
/// - inotify on /dev: an `iio:deviceN` node created (devtmpfs does send these) or handed to stepd by udev's
///   rule (a change of owner or mode);
/// - the kernel's and udev's uevents (NETLINK_KOBJECT_UEVENT) naming `SUBSYSTEM=iio`: every real device,
///   polled ones without a /dev node included.
/// A signal that cannot be had (no /sys/bus/iio before the iio module loads, netlink refused by a sandbox)
/// is left out, and `fallbackSeconds` bounds the wait whatever happens.
final class IIODeviceWatcher {
    static let sysfsDevices = "/sys/bus/iio/devices"
    static let deviceDirectory = "/dev"
    /// The last resort: a look this often even when no signal came.
    static let fallbackSeconds = 30.0
    // linux/netlink.h: NETLINK_KOBJECT_UEVENT; group 1 is the kernel's events, group 2 udev's (after its rules).
    private static let netlinkKobjectUevent: Int32 = 15
    private static let ueventGroups: UInt32 = 1 | 2

    private let logger: Logger
    /// What the watcher's owner waits for, for the debug log: "an accelerometer", "a barometer".
    private let looking: String
    private var inotify: Int32 = -1
    private var sysfsWatch: Int32 = -1
    private var uevents: Int32 = -1
    private var wakePipe: [Int32] = [-1, -1]
    private var started = false

    init(logger: Logger, looking: String) {
        self.logger = logger
        self.looking = looking
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if inotify >= 0 {
            let devMask = UInt32(IN_CREATE | IN_ATTRIB | IN_MOVED_TO)
            if inotify_add_watch(inotify, Self.deviceDirectory, devMask) < 0 {
                logger.debug("iio watch: cannot watch \(Self.deviceDirectory): \(String(cString: strerror(errno)))")
            }
        }
        uevents = Self.openUeventSocket(logger: logger)
        // Close-on-exec like every descriptor the daemon opens: a helper it ever runs must not hold them.
        if ciio_wake_pipe(&wakePipe) != 0 { wakePipe = [-1, -1] }
        arm()
        let sysfs = sysfsWatch >= 0 ? "inotify on \(Self.sysfsDevices)" : "\(Self.sysfsDevices) absent for now"
        let dev = inotify >= 0 ? "inotify on \(Self.deviceDirectory)" : "no inotify"
        let kernel = uevents >= 0 ? "kernel and udev uevents" : "no uevents"
        started = true
        logger.debug("iio watch: waiting for \(looking) with \(sysfs), \(dev), \(kernel); a look every \(Int(Self.fallbackSeconds)) s at most")
    }

    deinit {
        for fd in [inotify, uevents] + wakePipe where fd >= 0 { close(fd) }
    }

    /// (Re)watches /sys/bus/iio/devices, which appears only once the iio module is loaded; adding the same
    /// watch again is a no-op.
    func arm() {
        guard inotify >= 0 else { return }
        let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF)
        let watch = inotify_add_watch(inotify, Self.sysfsDevices, mask)
        if watch >= 0, watch != sysfsWatch {
            if started { logger.debug("iio watch: \(Self.sysfsDevices) appeared; watching it too") }
            sysfsWatch = watch
        }
    }

    /// Forgets what happened so far: called before looking for a device, so that an event after the look
    /// (and only such an event) ends the next wait.
    func drain() {
        _ = consume()
    }

    /// Waits until a signal says an IIO device may have appeared, up to `seconds`, or until `stop`;
    /// true if stopped.
    func wait(seconds: Double, stop: SourceThread) -> Bool {
        arm()
        let deadline = IIOTimeline.monotonicSeconds() + seconds
        while !stop.isStopped {
            let left = deadline - IIOTimeline.monotonicSeconds()
            if left <= 0 { return false }
            var fds = [inotify, uevents, wakePipe[0]].filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let wakeFD = wakePipe[0]
            let ready = stop.whileBlocking(cancel: { [wakePipe] in
                var byte: UInt8 = 1
                _ = write(wakePipe[1], &byte, 1)
            }) {
                poll(&fds, nfds_t(fds.count), Int32(min(left, 3600) * 1000) + 1)
            }
            if ready < 0 && errno != EINTR { return stop.wait(seconds: left) }
            if ready <= 0 { continue }
            if fds.contains(where: { $0.fd == wakeFD && $0.revents != 0 }) { return stop.isStopped }
            if consume() { return false }
        }
        return true
    }

    /// Reads every pending event; true if one may concern an IIO device.
    private func consume() -> Bool {
        var relevant = false
        var buffer = [UInt8](repeating: 0, count: 8192)
        if wakePipe[0] >= 0 { while read(wakePipe[0], &buffer, buffer.count) > 0 {} }
        if inotify >= 0 {
            while true {
                let n = read(inotify, &buffer, buffer.count)
                if n <= 0 { break }
                relevant = relevant || Self.inotifyConcernsIIO(buffer[0..<n], sysfsWatch: sysfsWatch)
            }
        }
        if uevents >= 0 {
            let key = Array("SUBSYSTEM=iio\0".utf8)
            while true {
                let n = recv(uevents, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n <= 0 { break }
                if Self.contains(buffer[0..<n], key) { relevant = true }
            }
        }
        if relevant { logger.debug("iio watch: a device event; looking for \(looking)") }
        return relevant
    }

    /// inotify_event records: on the sysfs watch any entry counts; under /dev only iio:* names do.
    static func inotifyConcernsIIO(_ bytes: ArraySlice<UInt8>, sysfsWatch: Int32) -> Bool {
        var offset = bytes.startIndex
        let header = MemoryLayout<inotify_event>.size
        var relevant = false
        while offset + header <= bytes.endIndex {
            let watch = bytes[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
            let length = Int(bytes[offset + 12..<offset + 16].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
            let nameBytes = bytes[(offset + header)..<min(offset + header + length, bytes.endIndex)].prefix { $0 != 0 }
            let name = String(decoding: nameBytes, as: UTF8.self)
            if watch == sysfsWatch || name.hasPrefix("iio:") { relevant = true }
            offset += header + length
        }
        return relevant
    }

    static func contains(_ haystack: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        var i = haystack.startIndex
        while i + needle.count <= haystack.endIndex {
            if haystack[i] == needle[0] && haystack[i..<i + needle.count].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }

    /// struct sockaddr_nl (linux/netlink.h), which Glibc's module does not bring.
    private struct NetlinkAddress {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32
    }

    private static func openUeventSocket(logger: Logger) -> Int32 {
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                        netlinkKobjectUevent)
        guard fd >= 0 else {
            logger.debug("iio watch: no uevent socket (\(String(cString: strerror(errno)))); inotify and a \(Int(fallbackSeconds)) s fallback only")
            return -1
        }
        var address = NetlinkAddress(groups: ueventGroups)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<NetlinkAddress>.size)) }
        }
        guard bound == 0 else {
            logger.debug("iio watch: cannot listen to uevents (\(String(cString: strerror(errno))))")
            close(fd)
            return -1
        }
        return fd
    }
}
