import Dispatch
import Foundation
import Logging

/// The one place that catches SIGTERM and SIGINT: stop the source, let the queue finish, close the socket, exit 0.
///
/// The signals are caught before anything starts (`catchSignals`), and handled on the main queue, which runs
/// only once start-up is over (`dispatchMain`): a signal that comes while the socket is being bound waits for
/// the stop actions (`whenSignalled`) instead of killing the daemon with its socket left behind. They are
/// blocked in every thread (threads inherit the mask of the one that starts them, and none has started yet), so
/// each stays pending until libdispatch's signalfd reads it: none is lost while the source is being registered.
enum ShutdownHandler {
    private static var sources: [DispatchSourceSignal] = []
    private static var stop: () -> Void = {}

    static func catchSignals(logger: Logger) {
        var caught = sigset_t()
        sigemptyset(&caught)
        sigaddset(&caught, SIGTERM)
        sigaddset(&caught, SIGINT)
        pthread_sigmask(SIG_BLOCK, &caught, nil)
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler {
                logger.notice("signal \(number): shutting down")
                stop()
                // The store is closed and the socket removed: leave without running exit handlers and static
                // destructors under threads that may still be finishing (a reader inside SQLite crashed there).
                fflush(nil)
                _exit(0)
            }
            source.resume()
            sources.append(source)
        }
        signal(SIGPIPE, SIG_IGN)
    }

    /// What a signal does once the daemon serves; set on the main thread before `dispatchMain`.
    static func whenSignalled(_ actions: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(.main))
        stop = actions
    }
}
