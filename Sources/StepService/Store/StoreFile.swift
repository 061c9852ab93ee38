import Foundation

/// Which file the store has open, by device and inode: a path can come to name another file (deleted and
/// recreated, moved away, a backup copied over it) while the open connection goes on writing to the old one,
/// where nothing would ever be read again. Comparing before each commit turns that into a state.
struct StoreFileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    /// The identity of the file at `path`, or why there is none.
    static func of(path: String) -> Result<StoreFileIdentity, StoreFileProblem> {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let error = errno
            let directory = (path as NSString).deletingLastPathComponent
            var directoryInfo = stat()
            if error == ENOENT, stat(directory, &directoryInfo) != 0 { return .failure(.directoryRemoved) }
            return .failure(error == ENOENT ? .vanished : .unreadable(String(cString: strerror(error))))
        }
        return .success(StoreFileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
    }
}

/// What happened to the open database file.
enum StoreFileProblem: Error, Equatable {
    case vanished
    case directoryRemoved
    case replaced
    case unreadable(String)

    var reason: String {
        switch self {
        case .vanished: return "the file was deleted while open"
        case .directoryRemoved: return "its directory was removed while open"
        case .replaced: return "another file was put in its place while open"
        case .unreadable(let why): return "the file cannot be examined: \(why)"
        }
    }
}
