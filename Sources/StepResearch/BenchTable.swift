import Foundation
import StepProcessing

/// What `stepd bench` uses from a trace's `meta.json` (../shared/data/README.md): where the device was carried,
/// whether the ground truth comes from foot switches, the walking bout of a short trial, whether the recording is
/// step-free (a hand activity: every step counted is a false one) and the activity segments of a recording.
struct TraceMeta {
    /// The carrying style, named as `stepd bench` groups them ("hand", "pocket back", "lower back", ...).
    var placement = "unknown"
    /// Foot switches bounce and miss footfalls, so such truth is scored after `GroundTruthRepair`.
    var footSwitchTruth = false
    /// The walking bout of a trial (stand, walk, turn, walk back, stop), seconds.
    var walkingBout: ClosedRange<Double>?
    /// No steps were taken (`"step_free": true`): the bench reports false steps per hour, apart from the walks.
    var stepFree = false
    /// What was done (`"activity"`), for a step-free recording.
    var activity: String?
    /// Activity segments (`"stairs_up_s": [[start, end], ...]` and the like, seconds), scored one activity at a time.
    var segments: [(activity: String, windows: [ClosedRange<Double>])] = []
    /// Who walked (`"subject"`, its first word), for the per-person tables; "?" when not given.
    var person = "?"
    /// The true number of steps, where the truth is a count and not instants (`"step_count"`, the Cambridge walks).
    var stepCount: Int?

    init() {}

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw TraceError(description: "cannot read \(path)") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TraceError(description: "\(path): not a JSON object")
        }
        if let placement = object["placement"] as? String { self.placement = Self.placementLabel(placement) }
        if let truth = object["ground_truth"] as? String { footSwitchTruth = truth.lowercased().contains("foot switch") }
        if let bout = object["walking_bout_s"] as? [Double] {
            guard bout.count == 2, bout[0].isFinite, bout[1].isFinite, bout[0] <= bout[1] else {
                throw TraceError(description: "\(path): walking_bout_s must be [start, end] in seconds")
            }
            walkingBout = bout[0]...bout[1]
        }
        if let flag = object["step_free"] as? Bool { stepFree = flag }
        if let subject = object["subject"] as? String, let first = subject.split(separator: " ").first { person = String(first) }
        if let count = object["step_count"] {
            guard let steps = count as? Int, steps > 0 else { throw TraceError(description: "\(path): step_count must be a positive whole number") }
            stepCount = steps
        }
        activity = object["activity"] as? String
        for key in object.keys.sorted() where key.hasSuffix("_s") {
            // A list of [start, end] pairs is a set of segments; a single pair (walking_bout_s, uturn_s) is not.
            guard let pairs = object[key] as? [[Double]] else { continue }
            var windows: [ClosedRange<Double>] = []
            for pair in pairs {
                guard pair.count == 2, pair[0].isFinite, pair[1].isFinite, pair[0] <= pair[1] else {
                    throw TraceError(description: "\(path): \(key) must be a list of [start, end] in seconds")
                }
                windows.append(pair[0]...pair[1])
            }
            segments.append((String(key.dropLast(2)).replacingOccurrences(of: "_", with: " "), windows))
        }
    }

    /// The labels, in the order the table prints them, with the spellings of the data sets' meta.json.
    static let placements: [(label: String, spellings: [String])] = [
        ("hand", ["inhand", "hand", "handheld"]), ("pocket front", ["frontpocket"]), ("pocket back", ["backpocket"]),
        ("neck", ["neckpouch", "neck"]), ("armband", ["armband"]), ("bag/purse", ["purse", "bag", "handbag"]),
        ("swinging arm", ["swingingarm"]), ("wrist", ["wrist"]), ("lower back", ["lowerback"]),
    ]

    /// "lower back (L5), fixed orientation" -> "lower back"; "inhand" -> "hand"; anything else is kept as written.
    static func placementLabel(_ raw: String) -> String {
        let key = raw.lowercased().prefix { $0 != "(" && $0 != "," }.filter(\.isLetter)
        return placements.first { $0.spellings.contains(String(key)) }?.label ?? raw
    }
}

/// The printed table: one row per trace, totals per folder, then per placement.
struct BenchTable {
    struct Row {
        var folder: String
        var trace: String
        var placement: String
        /// Scored against the repaired ground truth.
        var repaired: Bool
        /// Per detector: against the truth scored (repaired or recorded), the recorded truth, inside the bout.
        var scores: [StepAccuracy] = []
        var recorded: [StepAccuracy] = []
        var inBout: [StepAccuracy] = []
        /// A step-free recording: every detected step is false.
        var stepFree = false
        var activity: String?
        /// Seconds of recording (gaps between its recordings left out).
        var recordedSeconds = 0.0
        /// Per activity segment name, per detector: the steps inside that activity's segments.
        var byActivity: [(activity: String, scores: [StepAccuracy])] = []
    }

    let kinds: [StepDetectorKind]
    var rows: [Row] = []

    init(kinds: [StepDetectorKind]) { self.kinds = kinds }

    func print() {
        var header = "trace".rightPadded(36) + "  true"
        for kind in kinds { header += "  | " + "\(kind.rawValue): det   APE%    F1".leftPadded(30) }
        Swift.print(header)
        var folders: [String] = []
        for row in rows where !folders.contains(row.folder) { folders.append(row.folder) }
        for folder in folders {
            let group = rows.filter { $0.folder == folder }
            if group.allSatisfy(\.stepFree) {
                printStepFree(folder: folder, group: group)
                continue
            }
            let repairedCount = group.filter(\.repaired).count
            Swift.print("== \(folder) (\(group.count) traces" + (repairedCount > 0 ? "; \(repairedCount) scored against the repaired foot-switch truth)" : ")"))
            for row in group {
                var line = String(row.trace.prefix(36)).rightPadded(36) + String(format: "  %4d", row.scores[0].trueCount)
                for score in row.scores {
                    line += String(format: "  | %16d %6.2f %5.3f", score.detectedCount, score.absolutePercentageError, score.f1)
                }
                Swift.print(line)
            }
            summarize(label: "\(folder) total", rows: group, \.scores)
            if repairedCount > 0 { summarize(label: "\(folder) vs recorded truth", rows: group, \.recorded) }
            let bouts = group.filter { !$0.inBout.isEmpty }
            if !bouts.isEmpty { summarize(label: "\(folder) inside walking bouts", rows: bouts, \.inBout) }
            printActivities(folder: folder, group: group)
        }
        let walks = rows.filter { !$0.stepFree }
        let known = TraceMeta.placements.map(\.label)
        var placements = known.filter { label in walks.contains { $0.placement == label } }
        for row in walks where !placements.contains(row.placement) { placements.append(row.placement) }
        if placements.count > 1 || (placements.first.map { $0 != "unknown" } ?? false) {
            Swift.print("== by placement (all folders, walks)")
            for placement in placements {
                let group = walks.filter { $0.placement == placement }
                summarize(label: "\(placement) (\(group.count) traces)", rows: group, \.scores)
            }
        }
        let stepFree = rows.filter(\.stepFree)
        if !stepFree.isEmpty && folders.count > 1 {
            Swift.print("== step-free recordings (all folders): false steps per hour")
            summarizeStepFree(label: "all \(stepFree.count) activities", rows: stepFree)
        }
    }

    /// Step-free recordings: per activity the minutes recorded, the steps counted and their rate per hour.
    private func printStepFree(folder: String, group: [Row]) {
        var header = "== \(folder) (\(group.count) step-free recordings: every step counted is false)\n"
            + "activity".rightPadded(36) + "    min"
        for kind in kinds { header += "  | " + "\(kind.rawValue): steps  per hour".leftPadded(30) }
        Swift.print(header)
        for row in group {
            var line = String((row.activity ?? row.trace).prefix(36)).rightPadded(36) + String(format: "  %5.1f", row.recordedSeconds / 60)
            for score in row.scores {
                line += String(format: "  | %20d %8.1f", score.detectedCount, Self.perHour(score.detectedCount, row.recordedSeconds))
            }
            Swift.print(line)
        }
        summarizeStepFree(label: "\(folder) total", rows: group)
    }

    private func summarizeStepFree(label: String, rows: [Row]) {
        let seconds = rows.reduce(0) { $0 + $1.recordedSeconds }
        Swift.print("-- \(label) (\(String(format: "%.0f", seconds / 60)) min):")
        for (k, kind) in kinds.enumerated() {
            let steps = rows.reduce(0) { $0 + $1.scores[k].detectedCount }
            let worst = rows.max { Self.perHour($0.scores[k].detectedCount, $0.recordedSeconds) < Self.perHour($1.scores[k].detectedCount, $1.recordedSeconds) }
            Swift.print("   " + kind.rawValue.rightPadded(9) + String(format: ": %d false steps = %.1f per hour; worst %.1f per hour",
                               steps, Self.perHour(steps, seconds), worst.map { Self.perHour($0.scores[k].detectedCount, $0.recordedSeconds) } ?? 0)
                        + " (\(worst.map { $0.activity ?? $0.trace } ?? "-"))")
        }
    }

    static func perHour(_ steps: Int, _ seconds: Double) -> Double { seconds > 0 ? Double(steps) / seconds * 3600 : 0 }

    /// Walks with activity segments (level walking, stairs up, stairs down, standing): the steps of each activity.
    private func printActivities(folder: String, group: [Row]) {
        var activities: [String] = []
        for row in group { for segment in row.byActivity where !activities.contains(segment.activity) { activities.append(segment.activity) } }
        guard !activities.isEmpty else { return }
        Swift.print("-- \(folder) by activity (true steps inside each activity's segments; detected ones by their time less the lag):")
        for activity in activities {
            for (k, kind) in kinds.enumerated() {
                let scores = group.compactMap { row in row.byActivity.first { $0.activity == activity }?.scores[k] }
                let trueTotal = scores.reduce(0) { $0 + $1.trueCount }
                let detectedTotal = scores.reduce(0) { $0 + $1.detectedCount }
                let matched = scores.reduce(0) { $0 + $1.matchedCount }
                Swift.print("   " + activity.rightPadded(14) + kind.rawValue.rightPadded(9)
                            + String(format: ": true %d detected %d (total error %+.2f%%), F1 %.3f", trueTotal, detectedTotal,
                                     Double(detectedTotal - trueTotal) / Double(max(trueTotal, 1)) * 100,
                                     trueTotal + detectedTotal == 0 ? 1 : 2 * Double(matched) / Double(trueTotal + detectedTotal)))
            }
        }
    }

    private func summarize(label: String, rows: [Row], _ column: KeyPath<Row, [StepAccuracy]>) {
        Swift.print("-- \(label):")
        for (k, kind) in kinds.enumerated() {
            let scores = rows.map { $0[keyPath: column][k] }
            let trueTotal = scores.reduce(0) { $0 + $1.trueCount }
            let detectedTotal = scores.reduce(0) { $0 + $1.detectedCount }
            let meanError = scores.reduce(0) { $0 + $1.absolutePercentageError } / Double(scores.count)
            let worst = zip(rows, scores).max { $0.1.absolutePercentageError < $1.1.absolutePercentageError }
            let meanF1 = scores.reduce(0) { $0 + $1.f1 } / Double(scores.count)
            let minF1 = scores.map(\.f1).min() ?? 0
            Swift.print("   " + kind.rawValue.rightPadded(9) + String(format: ": true %d detected %d (total error %+.2f%%), mean APE %.2f%%, worst %.2f%%",
                               trueTotal, detectedTotal, Double(detectedTotal - trueTotal) / Double(max(trueTotal, 1)) * 100,
                               meanError, worst?.1.absolutePercentageError ?? 0)
                        + " (\(worst?.0.trace ?? "-"))" + String(format: ", mean F1 %.4f, min F1 %.3f", meanF1, minF1))
        }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
    func rightPadded(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
