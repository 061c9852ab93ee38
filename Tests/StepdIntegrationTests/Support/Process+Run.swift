import Foundation
import Locking

/// The output of a finished command.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a command to completion and returns what it printed.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                timeout: TimeInterval = 120) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Drain both pipes while the command runs, so a talkative command cannot block on a full pipe.
    let collected = Locked((out: Data(), err: Data()))
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        let data = out.fileHandleForReading.readDataToEndOfFile()
        collected.withLock { $0.out = data }
        group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
        let data = err.fileHandleForReading.readDataToEndOfFile()
        collected.withLock { $0.err = data }
        group.leave()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }  // poll interval of a wait for a state, not a fixed wait
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    group.wait()
    return CommandResult(status: process.terminationStatus,
                         stdout: String(decoding: collected.value.out, as: UTF8.self),
                         stderr: String(decoding: collected.value.err, as: UTF8.self))
}
