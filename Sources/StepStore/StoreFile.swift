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

/// The size and modification time of the database file and of its write-ahead log, as the store's last write
/// left them: the same file (inode) written by another program (truncated, a backup copied over it in place,
/// the log scribbled on) is noticed before the next commit. SQLite itself would not notice: in WAL mode its
/// page cache is checked against the shared-memory index, not the file, and its next checkpoint would mix its
/// pages with the stranger's. Nothing but the store's writes changes either file while it is open (readers
/// write only the `-shm` index), so any other change is a stranger's.
struct StoreFileContents: Equatable {
    struct Stamp: Equatable {
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int

        static func of(path: String) -> Stamp? {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return Stamp(size: Int64(info.st_size), modifiedSeconds: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec)
        }
    }

    var database: Stamp?
    var log: Stamp?

    static func of(path: String) -> StoreFileContents {
        StoreFileContents(database: Stamp.of(path: path), log: Stamp.of(path: path + "-wal"))
    }

    /// What another program did, comparing `now` with what the store left; nil when nothing.
    func change(to now: StoreFileContents) -> StoreFileProblem? {
        if let before = database, let after = now.database, before != after {
            return after.size < before.size ? .truncated(from: before.size, to: after.size) : .overwritten
        }
        if log != now.log {
            return now.log == nil ? .logDeleted : .logOverwritten
        }
        return nil
    }
}

/// What happened to the open database file.
enum StoreFileProblem: Error, Equatable {
    case vanished
    case directoryRemoved
    case replaced
    case unreadable(String)
    /// Same file, other contents: set aside, for a fresh database takes the count (StepStore.checkFile).
    case truncated(from: Int64, to: Int64)
    case overwritten
    case logOverwritten
    case logDeleted

    var reason: String {
        switch self {
        case .vanished: return "the file was deleted while open"
        case .directoryRemoved: return "its directory was removed while open"
        case .replaced: return "another file was put in its place while open"
        case .unreadable(let why): return "the file cannot be examined: \(why)"
        case .truncated(let from, let to):
            return "the file was truncated by another program while open (\(to) bytes, \(from) after the last commit)"
        case .overwritten: return "the file was overwritten in place by another program while open"
        case .logOverwritten: return "its write-ahead log was written by another program while open"
        case .logDeleted: return "its write-ahead log was deleted by another program while open"
        }
    }

    /// The file at the path is the one the store had open, with contents the store did not write.
    var isChangedInPlace: Bool {
        switch self {
        case .truncated, .overwritten, .logOverwritten, .logDeleted: return true
        case .vanished, .directoryRemoved, .replaced, .unreadable: return false
        }
    }
}
