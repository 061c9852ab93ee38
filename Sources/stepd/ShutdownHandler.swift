import Dispatch
import Foundation
import Logging

/// The one place that catches SIGTERM and SIGINT: stop the source, let the queue finish, close the socket, exit 0.
enum ShutdownHandler {
    private static var sources: [DispatchSourceSignal] = []

    static func install(logger: Logger, stop: @escaping () -> Void) {
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
}
