import Dispatch
import Foundation
import Locking
import Logging
import StepLogging
import StepService

/// The one place that catches SIGTERM and SIGINT (and SIGXCPU, SIGPWR): the daemon's Lifecycle stops its parts in
/// reverse order of start (the sources, the socket, the engine's queue, the store: docs/architecture.md), then
/// exit 0. Every other signal whose default action would kill the daemon without its final save is caught too,
/// except those of a crash (SIGSEGV, SIGABRT, ...: Swift's backtracer) and SIGQUIT (asked for a core dump) and
/// SIGKILL: SIGHUP, SIGUSR2, SIGALRM, SIGVTALRM, SIGIO, SIGSYS, SIGSTKFLT, SIGXFSZ and the real-time signals
/// are logged and ignored (stepd.conf is read at start only), SIGPROF is ignored, SIGUSR1 logs the daemon's
/// state, as STATUS says it to systemd (docs/man/stepd.8, SIGNALS).
///
/// The signals are caught before anything starts (`catchSignals`), and handled on a queue of their own that
/// runs only once start-up is over (`serve`): a signal that comes while the socket is being bound waits for
/// the Lifecycle (`whenSignalled`) instead of killing the daemon with its socket left behind. Not the main
/// queue: `dispatchMain()` ends the main thread with `pthread_exit`, whose forced unwind walks every frame of
/// its stack through the unwind tables (.eh_frame_hdr, .eh_frame, .gcc_except_table) and maps 0.6 MB of them
/// for good (docs/iio.md, "Memory"); `serve` parks the main thread instead. They are
/// blocked in every thread (threads inherit the mask of the one that starts them, and none has started yet), so
/// each stays pending until libdispatch's signalfd reads it: none is lost while the source is being registered.
enum ShutdownHandler {
    /// The signal sources (kept for the life of the process), what stops the daemon and what SIGUSR1 logs.
    private struct Handling {
        var sources: [any DispatchSourceSignal] = []
        var lifecycle: Lifecycle?
        var state: @Sendable () -> String = { "starting" }
    }
    private static let handling = Locked(Handling())
    /// Where the signals are handled: suspended until `serve`.
    private static let queue: DispatchQueue = {
        let queue = DispatchQueue(label: "stepd.signals")
        queue.suspend()
        return queue
    }()

    /// Signals that ask the daemon to stop: it stops as for SIGTERM, with its final save. SIGXCPU comes when
    /// the CPU-time soft limit is reached (the hard limit's SIGKILL follows), SIGPWR when the power is failing.
    static let stopping = [SIGTERM, SIGINT, SIGXCPU, SIGPWR]
    /// Signals whose default action would kill the daemon without its final save, and that mean nothing to
    /// it: logged (at most once per signal per 10 s) and ignored. The real-time signals from SIGRTMIN (glibc
    /// keeps the two below it for its own threads) are included. SIGXFSZ ignored makes a write past the file-size
    /// limit fail with EFBIG, which the store reports as a state, instead of killing the process.
    static var ignored: [Int32] {
        [SIGALRM, SIGVTALRM, SIGIO, SIGSYS, SIGSTKFLT, SIGXFSZ]
            + Array(__libc_current_sigrtmin()...__libc_current_sigrtmax())
    }

    static func catchSignals(logger: Logger) {
        var caught = sigset_t()
        sigemptyset(&caught)
        for number in stopping + [SIGHUP, SIGUSR1, SIGUSR2] + ignored { sigaddset(&caught, number) }
        pthread_sigmask(SIG_BLOCK, &caught, nil)
        for number in stopping {
            handle(number) {
                logger.notice("signal \(number) (\(name(of: number))): shutting down")
                handling.withLock { $0.lifecycle }?.stop()
                // The store is closed and the socket removed: leave without running exit handlers and static
                // destructors under threads that may still be finishing (a reader inside SQLite crashed there).
                fflush(nil)
                _exit(0)
            }
        }
        handle(SIGHUP) {
            logger.notice("SIGHUP ignored: stepd reads its configuration only at start; restart it to apply a change (systemctl restart stepd)")
        }
        handle(SIGUSR1) { logger.notice("SIGUSR1: \(handling.withLock { $0.state }())") }
        handle(SIGUSR2) { logger.notice("SIGUSR2 ignored") }
        let repeated = RateLimitedLog(logger: logger)
        for number in ignored {
            handle(number) { repeated.log(.notice, cause: "\(number)", "signal \(number) (\(name(of: number))) ignored") }
        }
        // SIGPROF is ignored but not blocked: Swift's crash backtracer may signal the other threads to stop
        // them while it walks their stacks, and a thread that blocks the signal would never stop. A handler
        // already there (a profiler's, the runtime's) is left as it is.
        var current = sigaction()
        if sigaction(SIGPROF, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil {
            signal(SIGPROF, SIG_IGN)
        }
        signal(SIGPIPE, SIG_IGN)
    }

    /// The signal's name as kill(1) prints it (`ALRM`, `RTMIN+3`), for the log.
    static func name(of number: Int32) -> String {
        let rtmin = __libc_current_sigrtmin()
        if number >= rtmin && number <= __libc_current_sigrtmax() {
            return number == rtmin ? "SIGRTMIN" : "SIGRTMIN+\(number - rtmin)"
        }
        let names: [Int32: String] = [SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGXCPU: "SIGXCPU", SIGPWR: "SIGPWR",
                                      SIGALRM: "SIGALRM", SIGVTALRM: "SIGVTALRM", SIGIO: "SIGIO", SIGSYS: "SIGSYS",
                                      SIGSTKFLT: "SIGSTKFLT", SIGXFSZ: "SIGXFSZ"]
        return names[number] ?? "signal \(number)"
    }

    private static func handle(_ number: Int32, _ body: @escaping @Sendable () -> Void) {
        signal(number, SIG_IGN)
        handling.withLock {
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler(handler: body)
            source.resume()
            $0.sources.append(source)
        }
    }

    /// Start-up is over: the signals are handled from now on, and the main thread, which has nothing left to
    /// do, sleeps for good (the signals are blocked in it: they wait for libdispatch's signalfd, never for it).
    static func serve() -> Never {
        queue.resume()
        while true { pause() }
    }

    /// What a signal stops once the daemon serves; set on the main thread before `serve`. `state` is
    /// the line SIGUSR1 logs.
    static func whenSignalled(lifecycle: Lifecycle, state: @escaping @Sendable () -> String) {
        dispatchPrecondition(condition: .onQueue(.main))
        handling.withLock {
            $0.lifecycle = lifecycle
            $0.state = state
        }
    }
}
