#if canImport(Glibc)
import Glibc
#endif

/// glibc's malloc gives each thread that allocates while another holds the lock an arena of its own (up to 8
/// per core), and each arena keeps its own free pages: 0.1-0.2 MB of resident memory a thread for a daemon whose
/// threads allocate a few kilobytes a second. Two arenas are enough for stepd's load (docs/iio.md, "Memory").
/// An administrator's MALLOC_ARENA_MAX (glibc's own variable) wins. glibc only: Swift's Glibc module has no
/// malloc.h, so mallopt is found by name.
enum MallocArenas {
    static let daemonLimit: Int32 = 2
    /// M_ARENA_MAX in glibc's malloc.h.
    private static let arenaMaxParameter: Int32 = -8

    /// Call first, before the daemon starts its threads.
    static func limit(to count: Int32 = daemonLimit) {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil, let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMaxParameter, count)
        #endif
    }
}
