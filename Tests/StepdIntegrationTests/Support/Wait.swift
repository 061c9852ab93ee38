import Foundation

/// A wait that ran out. Thrown, so the test fails once, with what it waited for and what it saw last; a
/// missing tool is the only reason a test skips (XCTSkip at the test's start), never a wait.
struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    let timeoutSeconds: TimeInterval
    let detail: String
    let file: StaticString
    let line: UInt

    var description: String {
        "\(file):\(line): timed out after \(timeoutSeconds) s waiting for \(what)" + (detail.isEmpty ? "" : "; \(detail)")
    }
}

/// Calls `probe` every `interval` until it returns a value and returns that value, or throws `WaitTimedOut`
/// after `timeout`. An error `probe` throws (a daemon that exited) ends the wait at once. `detail` is read only
/// on a timeout: the log, the last reply.
@discardableResult
func pollFor<T>(_ what: String, timeout: TimeInterval, every interval: TimeInterval = 0.05,
                detail: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
                _ probe: () throws -> T?) throws -> T {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if let value = try probe() { return value }
        guard Date() < deadline else {
            throw WaitTimedOut(what: what, timeoutSeconds: timeout, detail: detail(), file: file, line: line)
        }
        usleep(useconds_t(interval * 1_000_000))  // poll interval of a wait for a state, not a fixed wait
    }
}

/// `pollFor` for a condition without a value.
func pollUntil(_ what: String, timeout: TimeInterval, every interval: TimeInterval = 0.05,
               detail: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
               _ condition: () throws -> Bool) throws {
    try pollFor(what, timeout: timeout, every: interval, detail: detail(), file: file, line: line) {
        try condition() ? () : nil
    }
}

/// A process the test was waiting on ended first.
struct ProcessExited: Error, CustomStringConvertible {
    let what: String
    let log: String
    var description: String { "\(what) exited; log:\n\(log)" }
}

/// Waits until `log` (read afresh each time: a file a running process writes) holds `text`. A line logged beside a
/// state change can land just after the state a test waited on (a counter in STATUS, a reply, a client's exit),
/// so a running process's log is waited on, not read once; the log of a process that has exited is complete.
func waitForLog(_ text: String, in log: () -> String, timeout: TimeInterval = 20,
                file: StaticString = #filePath, line: UInt = #line) throws {
    try pollUntil("\"\(text)\" in the log", timeout: timeout, detail: log(), file: file, line: line) {
        log().contains(text)
    }
}
