import Foundation
import StepProcessing

/// The tables of `stepd bench` over every kind of truth: the count-truth walks trace by trace, the labelled runs
/// that went wrong, then per set and placement and per set and person, with the walking recall.
struct BenchReport {
    let kinds: [StepDetectorKind]
    let scores: [TraceScore]

    func print() {
        printCounts()
        printLabelled()
        let walks = scores.filter { $0.truth != .stepFree }
        guard !walks.isEmpty else { return }
        for kind in kinds {
            let mine = walks.filter { $0.detector == kind.rawValue }
            printSummaries(title: "== by set (\(kind.rawValue))", mine, key: { _ in "all" })
            printSummaries(title: "== by set and placement (\(kind.rawValue))", mine, key: { $0.placement })
            printSummaries(title: "== by set and person (\(kind.rawValue))", mine, key: { $0.person })
        }
    }

    /// Traces whose truth is a count (the Cambridge walks), one line each, the detectors side by side.
    private func printCounts() {
        let counted = scores.filter { $0.truth == .count }
        for set in Self.sets(counted) {
            let rows = counted.filter { $0.set == set }
            let traces = Self.uniqueTraces(rows)
            Swift.print("== \(set) (\(traces.count) walks, truth a step count; error = |detected - true| / true over the recording, "
                        + "and inside the walk widened by 1 s; recall = the share of the walk covered by runs of counted steps; "
                        + "steps% = min(detected in the walk, true) / true)")
            var header = "trace".padded(28) + "placement".padded(14) + "  true"
            for kind in kinds { header += "  | " + "\(kind.rawValue): whole  err%  walk  err%  recall%  steps%".leftPadded(48) }
            Swift.print(header)
            for trace in traces {
                let first = rows.first { $0.trace == trace }!
                var line = String(trace.prefix(27)).padded(28) + String(first.placement.prefix(13)).padded(14)
                    + String(format: "  %4d", first.trueCount)
                for kind in kinds {
                    guard let score = rows.first(where: { $0.trace == trace && $0.detector == kind.rawValue }) else { continue }
                    line += String(format: "  | %17d %5.1f %5d %5.1f %8.2f %7.2f", score.detectedCount, score.errorPercent ?? .nan,
                                   score.detectedInWalk ?? 0, score.walkErrorPercent ?? .nan, score.walkingRecall?.percent ?? .nan,
                                   score.walkCountRecallPercent ?? .nan)
                }
                Swift.print(line)
            }
            for kind in kinds {
                let mine = rows.filter { $0.detector == kind.rawValue }
                let summary = ScoreSummary(mine)
                let walkErrors = mine.compactMap(\.walkErrorPercent)
                Swift.print("-- \(set) total, " + kind.rawValue + String(format: ": true %d detected %d (total error %+.2f%%), mean error %.2f%%, worst %.2f%% (%@); "
                                   + "inside the walk mean %.2f%%, worst %.2f%%; walks over 10%%: %d; steps let through inside the walks %.2f%%",
                                   summary.trueCount, summary.detectedCount, summary.totalErrorPercent, summary.meanErrorPercent ?? 0,
                                   summary.worstErrorPercent ?? 0, summary.worstErrorTrace ?? "-",
                                   walkErrors.isEmpty ? 0 : walkErrors.reduce(0, +) / Double(walkErrors.count), walkErrors.max() ?? 0,
                                   mine.filter { ($0.errorPercent ?? 0) > 10 }.count,
                                   Double(mine.reduce(0) { $0 + min($1.detectedInWalk ?? 0, $1.trueCount) }) / Double(max(summary.trueCount, 1)) * 100))
            }
        }
    }

    /// Runs labelled by activity without step truth (sp-sw-har): each run whose walking got no step or that
    /// counted steps while seated, then the steps of each activity per placement and person.
    private func printLabelled() {
        let labelled = scores.filter { $0.truth == .labels }
        for set in Self.sets(labelled) {
            let rows = labelled.filter { $0.set == set }
            Swift.print("== \(set) (\(Self.uniqueTraces(rows).count) runs labelled by activity, no step truth: "
                        + "walking must give steps at a walking cadence, seated none)")
            for kind in kinds {
                let mine = rows.filter { $0.detector == kind.rawValue }
                let wrong = mine.filter { $0.isWalkWithoutSteps || ($0.activitySteps["seated"] ?? 0) > 0 }
                Swift.print("-- \(kind.rawValue): \(wrong.count) runs with a walk without steps or steps while seated"
                            + (wrong.isEmpty ? "" : ":"))
                for score in wrong {
                    Swift.print("   " + score.trace.padded(24) + String(format: "walking %d steps in %.1f s", score.activitySteps["walking"] ?? 0,
                                                                      score.activitySeconds["walking"] ?? 0)
                                + Self.stillActivities.map { ", \($0) \(score.activitySteps[$0] ?? 0)" }.joined())
                }
                for (title, key) in [("placement", { (s: TraceScore) in s.placement }), ("person", { (s: TraceScore) in s.person })] {
                    Swift.print("   by \(title)".padded(20) + "  runs  walk s  walk steps  spm  walks without steps"
                                + Self.stillActivities.map { "  \($0)".leftPadded(14) }.joined() + "  turning")
                    for (name, summary) in ScoreSummary.grouped(mine, by: key) + [("all", ScoreSummary(mine))] {
                        Swift.print("   " + name.padded(17) + String(format: "  %4d  %6.1f  %10d  %3.0f  %19d", summary.traces,
                                                                   summary.activitySeconds["walking"] ?? 0, summary.activitySteps["walking"] ?? 0,
                                                                   summary.walkingCadenceStepsPerMinute ?? 0, summary.walksWithoutSteps)
                                    + Self.stillActivities.map { String(format: "%14d", summary.activitySteps[$0] ?? 0) }.joined()
                                    + String(format: "  %7d", summary.activitySteps["turning"] ?? 0))
                    }
                }
            }
        }
    }

    /// The labelled activities besides walking and turning: no step while seated; getting up and sitting down
    /// may take a step or two (the feet are placed), reported beside it.
    static let stillActivities = ["seated", "standing up", "sitting down"]

    /// One line per set and group: count error, F1 where step instants are known, walking recall.
    private func printSummaries(title: String, _ rows: [TraceScore], key: (TraceScore) -> String) {
        Swift.print(title + ": count error over the recording; recall = the walking recall (per step: true steps in walking "
                    + "bouts paired with a detected step; per second: the share of the walk covered by counted steps); "
                    + "gate = of what the detector without its walking gate found there, the share the gate let through")
        Swift.print("set".padded(16) + "group".padded(16) + "traces   true  detected  mean err%  worst err%  mean F1  min F1"
                    + "  recall%  lowest%    gate%  lowest%  unit    worst error; lowest recall; lowest gate")
        for set in Self.sets(rows) {
            for (name, summary) in ScoreSummary.grouped(rows.filter { $0.set == set }, by: key) {
                var line = set.padded(15) + " " + String(name.prefix(15)).padded(16) + String(format: "%6d", summary.traces)
                if let mean = summary.meanErrorPercent {
                    line += String(format: " %6d  %8d  %9.2f  %10.2f", summary.trueCount, summary.detectedCount, mean,
                                   summary.worstErrorPercent ?? 0)
                } else {
                    line += "      -         -          -           -"
                }
                line += summary.meanF1.map { String(format: "  %7.4f  %6.3f", $0, summary.minimumF1 ?? 0) } ?? "        -       -"
                if let recall = summary.walkingRecall {
                    line += String(format: "  %7.2f  %7.2f", recall.percent, summary.lowestRecallPercent ?? 100)
                        + (summary.gateRecall.map { String(format: "  %7.2f  %7.2f", $0.percent, summary.lowestGatePercent ?? 100) } ?? "        -        -")
                        + "  " + (recall.unit == .steps ? "step  " : "second")
                        + "  \(summary.worstErrorTrace ?? "-"); \(summary.lowestRecallTrace ?? "-"); \(summary.lowestGateTrace ?? "-")"
                } else if summary.activitySteps["walking"] != nil {
                    line += "        -        -        -        -  no step truth: \(summary.walksWithoutSteps) walks without steps, "
                        + "\(summary.activitySteps["seated"] ?? 0) steps while seated"
                }
                Swift.print(line)
            }
        }
    }

    /// The sets in the order their traces came.
    static func sets(_ scores: [TraceScore]) -> [String] {
        var sets: [String] = []
        for score in scores where !sets.contains(score.set) { sets.append(score.set) }
        return sets
    }

    static func uniqueTraces(_ scores: [TraceScore]) -> [String] {
        var traces: [String] = []
        var seen = Set<String>()
        for score in scores where seen.insert(score.trace).inserted { traces.append(score.trace) }
        return traces
    }

    /// One JSON object per trace and detector a line, for scripts that tabulate folds of their own (a learned
    /// model's leave-one-subject-out): the fields are docs/step-detection.md's.
    static func writeJSONLines(_ scores: [TraceScore], to path: String) throws {
        var text = ""
        for score in scores {
            let data = try JSONSerialization.data(withJSONObject: jsonObject(score), options: [.sortedKeys])
            text += String(decoding: data, as: UTF8.self) + "\n"
        }
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw TraceError(description: "--json: cannot write \(path): \(error.localizedDescription)")
        }
    }

    static func jsonObject(_ score: TraceScore) -> [String: Any] {
        func rounded(_ value: Double) -> Double { value.isFinite ? (value * 1000).rounded() / 1000 : 0 }
        var object: [String: Any] = [
            "set": score.set, "trace": score.trace, "placement": score.placement, "person": score.person,
            "detector": score.detector, "truth": score.truth.rawValue, "detected_steps": score.detectedCount,
            "recorded_s": rounded(score.recordedSeconds),
        ]
        if score.isCounted { object["true_steps"] = score.trueCount }
        if let error = score.errorPercent { object["error_pct"] = rounded(error) }
        if let matched = score.matchedCount { object["matched_steps"] = matched }
        if let f1 = score.f1 { object["f1"] = rounded(f1) }
        if let inWalk = score.detectedInWalk { object["walk_detected_steps"] = inWalk }
        if let error = score.walkErrorPercent { object["walk_error_pct"] = rounded(error) }
        if let recall = score.walkCountRecallPercent { object["walk_count_recall_pct"] = rounded(recall) }
        if let recall = score.walkingRecall {
            object["walking_recall_pct"] = rounded(recall.percent)
            object["walking_recall_unit"] = recall.unit.rawValue
            object["walking_recall_kept"] = rounded(recall.kept)
            object["walking_recall_total"] = rounded(recall.total)
        }
        if let gate = score.gateRecall {
            object["gate_recall_pct"] = rounded(gate.percent)
            object["gate_recall_kept"] = rounded(gate.kept)
            object["gate_recall_total"] = rounded(gate.total)
        }
        if score.truth == .labels {
            object["activity_steps"] = score.activitySteps
            object["activity_s"] = score.activitySeconds.mapValues(rounded)
            object["walk_without_steps"] = score.isWalkWithoutSteps
        }
        return object
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
    func padded(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
