import Foundation
import StepProcessing

/// What `stepd bench` uses from a trace's `meta.json` (../shared/data/README.md): where the device was carried,
/// whether the ground truth comes from foot switches, and the walking bout of a short trial.
struct TraceMeta {
    /// The carrying style, named as `stepd bench` groups them ("hand", "pocket back", "lower back", ...).
    var placement = "unknown"
    /// Foot switches bounce and miss footfalls, so such truth is scored after `GroundTruthRepair`.
    var footSwitchTruth = false
    /// The walking bout of a trial (stand, walk, turn, walk back, stop), seconds.
    var walkingBout: ClosedRange<Double>?

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
    }

    /// The labels, in the order the table prints them, with the spellings of the data sets' meta.json.
    static let placements: [(label: String, spellings: [String])] = [
        ("hand", ["inhand", "hand"]), ("pocket front", ["frontpocket"]), ("pocket back", ["backpocket"]),
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
        }
        let known = TraceMeta.placements.map(\.label)
        var placements = known.filter { label in rows.contains { $0.placement == label } }
        for row in rows where !placements.contains(row.placement) { placements.append(row.placement) }
        guard placements.count > 1 || placements.first != "unknown" else { return }
        Swift.print("== by placement (all folders)")
        for placement in placements {
            let group = rows.filter { $0.placement == placement }
            summarize(label: "\(placement) (\(group.count) traces)", rows: group, \.scores)
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
