import Foundation
import Glibc
import Locking
import StepAcquisition
import StepProtocol
import Timekeeping

/// Analyses recordings on `jobs` threads, each taking the next file (largest first, so that a long one does
/// not start last), and reports them in the order given, each as soon as it and those before it are done. On
/// a terminal, a progress line on standard error says the files done, samples a second and the time left.
/// The counters the workers share are in a `Locked` value; a semaphore signalled per file done wakes the reporting thread.
final class AnalysisRunner: Sendable {
    enum Outcome: Sendable {
        case success(AnalysisResult)
        case failure(AnalysisFailure)
    }

    private let analyses: [RecordingAnalysis]
    private let jobs: Int
    private let sizes: [Int]
    /// What the workers and the reporting thread share.
    private struct Progress {
        var outcomes: [Outcome?]
        var bytesRead: [Int]
        var samplesRead: [Int]
        /// The files not yet taken by a worker, largest first.
        var queue: [Int]
        var started = 0.0
        var finished = 0.0
        var totalSteps = 0
        var totalSamples = 0
        var totalSeconds = 0.0
        var failures = 0
        var doneCount = 0
    }
    private let progress: Locked<Progress>
    /// Signalled once per file done, after its outcome is stored: the reporting thread waits on it.
    private let fileDone = DispatchSemaphore(value: 0)

    init(analyses: [RecordingAnalysis], jobs: Int) {
        self.analyses = analyses
        self.jobs = max(1, jobs)
        let sizes = analyses.map { analysis in
            ((try? FileManager.default.attributesOfItem(atPath: analysis.path))?[.size] as? NSNumber)?.intValue ?? 0
        }
        self.sizes = sizes
        progress = Locked(Progress(outcomes: Array(repeating: nil, count: analyses.count),
                                  bytesRead: Array(repeating: 0, count: analyses.count),
                                  samplesRead: Array(repeating: 0, count: analyses.count),
                                  queue: analyses.indices.sorted { sizes[$0] > sizes[$1] }))
    }

    /// Runs every analysis; `report` is called on this thread, in the files' order. Returns the exit status:
    /// 0, or that of the first file that failed.
    func run(report: (Outcome) -> Void) -> ExitStatus {
        progress.withLock { $0.started = RecordingReader.monotonicSeconds() }
        let showProgress = isatty(STDERR_FILENO) == 1
        for _ in 0..<jobs {
            Thread { [self] in work() }.start()
        }
        var status = ExitStatus.success
        var lastProgress = 0.0
        var nextInOrder = 0
        while nextInOrder < analyses.count {
            let index = nextInOrder
            // Reported: its step times need not stay.
            if let outcome = progress.withLock({ p -> Outcome? in
                defer { p.outcomes[index] = nil }
                return p.outcomes[index]
            }) {
                nextInOrder += 1
                if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                if case .failure(let failure) = outcome, status == .success { status = failure.status }
                report(outcome)
                continue
            }
            _ = fileDone.wait(timeout: SystemClock.dispatchDeadline(after: showProgress ? 0.5 : 3600))
            let now = RecordingReader.monotonicSeconds()
            if showProgress && now - lastProgress >= 0.5 {
                lastProgress = now
                let line = progress.withLock { progressLine(now: now, $0) }
                FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            }
        }
        progress.withLock { $0.finished = RecordingReader.monotonicSeconds() }
        if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        return status
    }

    private func work() {
        while let index = progress.withLock({ $0.queue.isEmpty ? nil : $0.queue.removeFirst() }) {
            let outcome: Outcome
            do {
                let result = try analyses[index].run { bytes, samples in
                    progress.withLock {
                        $0.bytesRead[index] = bytes
                        $0.samplesRead[index] = samples
                    }
                }
                outcome = .success(result)
            } catch let failure as AnalysisFailure {
                outcome = .failure(failure)
            } catch {
                outcome = .failure(AnalysisFailure(description: "\(analyses[index].path): \(error)", status: .software))
            }
            progress.withLock { p in
                switch outcome {
                case .success(let result):
                    p.totalSteps += result.steps
                    p.totalSamples += result.samples
                    p.totalSeconds += result.durationSeconds
                case .failure:
                    p.failures += 1
                }
                p.bytesRead[index] = sizes[index]
                p.doneCount += 1
                p.outcomes[index] = outcome
            }
            fileDone.signal()
        }
    }

    /// "[12/101 files] 8.4 million samples/s, 5 s left".
    private func progressLine(now: Double, _ p: Progress) -> String {
        let elapsed = max(now - p.started, 1e-3)
        let samples = p.samplesRead.reduce(0, +)
        let totalBytes = max(sizes.reduce(0, +), 1)
        let fraction = min(1, Double(p.bytesRead.reduce(0, +)) / Double(totalBytes))
        let left = fraction > 0.01 ? String(format: ", %.0f s left", elapsed * (1 - fraction) / fraction) : ""
        return String(format: "[%d/%d files] %.1f million samples/s%@", p.doneCount, analyses.count, Double(samples) / elapsed / 1e6, left)
    }

    /// The line after several files: steps, files, samples and speed.
    var totalLine: String {
        let (started, finished, totalSteps, totalSamples, totalSeconds, failures) = progress.withLock {
            ($0.started, $0.finished, $0.totalSteps, $0.totalSamples, $0.totalSeconds, $0.failures)
        }
        let wall = max(finished - started, 1e-9)
        let ok = analyses.count - failures
        return String(format: "total: %d steps in %d file%@ (%.1f h recorded, %d samples) in %.2f s: %.2f million samples/s on %d thread%@",
                      totalSteps, ok, ok == 1 ? "" : "s", totalSeconds / 3600, totalSamples, wall,
                      Double(totalSamples) / wall / 1e6, jobs, jobs == 1 ? "" : "s")
            + (failures > 0 ? "; \(failures) could not be read" : "")
    }
}
