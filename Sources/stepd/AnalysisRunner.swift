import Foundation
import Glibc
import StepAcquisition
import StepProtocol

/// Analyses recordings on `jobs` threads, each taking the next file (largest first, so that a long one does
/// not start last), and reports them in the order given, each as soon as it and those before it are done. On
/// a terminal, a progress line on standard error says the files done, samples a second and the time left.
///
// unchecked: every mutable field is read and written under `condition`'s lock (its wait needs an NSCondition).
final class AnalysisRunner: @unchecked Sendable {
    enum Outcome {
        case success(AnalysisResult)
        case failure(AnalysisFailure)
    }

    private let analyses: [RecordingAnalysis]
    private let jobs: Int
    /// Guards everything below it; the workers signal it when a file ends.
    private let condition = NSCondition()
    private var outcomes: [Outcome?]
    private var bytesRead: [Int]
    private var samplesRead: [Int]
    private var nextInOrder = 0
    private var queue: [Int]
    private let sizes: [Int]
    private var started = 0.0
    private var finished = 0.0
    private var totalSteps = 0
    private var totalSamples = 0
    private var totalSeconds = 0.0
    private var failures = 0
    private var doneCount = 0

    init(analyses: [RecordingAnalysis], jobs: Int) {
        self.analyses = analyses
        self.jobs = max(1, jobs)
        outcomes = Array(repeating: nil, count: analyses.count)
        bytesRead = Array(repeating: 0, count: analyses.count)
        samplesRead = Array(repeating: 0, count: analyses.count)
        let sizes = analyses.map { analysis in
            ((try? FileManager.default.attributesOfItem(atPath: analysis.path))?[.size] as? NSNumber)?.intValue ?? 0
        }
        self.sizes = sizes
        queue = analyses.indices.sorted { sizes[$0] > sizes[$1] }
    }

    /// Runs every analysis; `report` is called on this thread, in the files' order. Returns the exit status:
    /// 0, or that of the first file that failed.
    func run(report: (Outcome) -> Void) -> ExitStatus {
        started = RecordingReader.monotonicSeconds()
        let progress = isatty(STDERR_FILENO) == 1
        var threads: [Thread] = []
        for _ in 0..<jobs {
            let thread = Thread { [self] in work() }
            threads.append(thread)
            thread.start()
        }
        var status = ExitStatus.success
        var lastProgress = 0.0
        condition.lock()
        while nextInOrder < analyses.count {
            while nextInOrder < analyses.count, let outcome = outcomes[nextInOrder] {
                outcomes[nextInOrder] = nil   // reported: its step times need not stay
                nextInOrder += 1
                condition.unlock()
                if progress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                if case .failure(let failure) = outcome, status == .success { status = failure.status }
                report(outcome)
                condition.lock()
            }
            guard nextInOrder < analyses.count else { break }
            _ = condition.wait(until: Date(timeIntervalSinceNow: progress ? 0.5 : 3600))
            let now = RecordingReader.monotonicSeconds()
            if progress && now - lastProgress >= 0.5 {
                lastProgress = now
                let line = progressLine(now: now)
                condition.unlock()
                FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
                condition.lock()
            }
        }
        condition.unlock()
        finished = RecordingReader.monotonicSeconds()
        if progress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        return status
    }

    private func work() {
        while true {
            condition.lock()
            guard !queue.isEmpty else {
                condition.unlock()
                return
            }
            let index = queue.removeFirst()
            condition.unlock()
            let outcome: Outcome
            do {
                let result = try analyses[index].run { bytes, samples in
                    condition.lock()
                    bytesRead[index] = bytes
                    samplesRead[index] = samples
                    condition.unlock()
                }
                outcome = .success(result)
            } catch let failure as AnalysisFailure {
                outcome = .failure(failure)
            } catch {
                outcome = .failure(AnalysisFailure(description: "\(analyses[index].path): \(error)", status: .software))
            }
            condition.lock()
            switch outcome {
            case .success(let result):
                totalSteps += result.steps
                totalSamples += result.samples
                totalSeconds += result.durationSeconds
            case .failure:
                failures += 1
            }
            bytesRead[index] = sizes[index]
            doneCount += 1
            outcomes[index] = outcome
            condition.broadcast()
            condition.unlock()
        }
    }

    /// "[12/101 files] 8.4 million samples/s, 5 s left"; called with the lock held.
    private func progressLine(now: Double) -> String {
        let done = doneCount
        let elapsed = max(now - started, 1e-3)
        let samples = samplesRead.reduce(0, +)
        let totalBytes = max(sizes.reduce(0, +), 1)
        let fraction = min(1, Double(bytesRead.reduce(0, +)) / Double(totalBytes))
        let left = fraction > 0.01 ? String(format: ", %.0f s left", elapsed * (1 - fraction) / fraction) : ""
        return String(format: "[%d/%d files] %.1f million samples/s%@", done, analyses.count, Double(samples) / elapsed / 1e6, left)
    }

    /// The line after several files: steps, files, samples and speed.
    var totalLine: String {
        let wall = max(finished - started, 1e-9)
        let ok = analyses.count - failures
        return String(format: "total: %d steps in %d file%@ (%.1f h recorded, %d samples) in %.2f s: %.2f million samples/s on %d thread%@",
                      totalSteps, ok, ok == 1 ? "" : "s", totalSeconds / 3600, totalSamples, wall,
                      Double(totalSamples) / wall / 1e6, jobs, jobs == 1 ? "" : "s")
            + (failures > 0 ? "; \(failures) could not be read" : "")
    }
}
