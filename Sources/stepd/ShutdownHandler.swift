import Dispatch
import Foundation
import Logging

/// The one place that catches SIGTERM and SIGINT: stop the source, let the queue finish, close the socket, exit 0.
///
/// The signals are caught before anything starts (`catchSignals`), and handled on the main queue, which runs
/// only once start-up is over (`dispatchMain`): a signal that comes while the socket is being bound waits for
/// the stop actions (`whenSignalled`) instead of killing the daemon with its socket left behind.
enum ShutdownHandler {
    private static var sources: [DispatchSourceSignal] = []
    private static var stop: () -> Void = {}

    static func catchSignals(logger: Logger) {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler {
                logger.notice("signal \(number): shutting down")
                stop()
                exit(0)
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
