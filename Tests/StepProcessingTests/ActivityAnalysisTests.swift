import StepProcessing
import XCTest

/// Minutes, bouts, days and the timeline of `stepd analyze`, on constructed step trains with exact answers.
final class ActivityAnalysisTests: XCTestCase {
    /// Steps every `interval` seconds from `start`, `count` of them.
    private func train(from start: Double, every interval: Double, count: Int) -> [Double] {
        (0..<count).map { start + Double($0) * interval }
    }

    private struct Run {
        var minutes: [MinuteBin] = []
        var bouts: [ActivityBout] = []
        var analysis: ActivityAnalysis
    }

    /// Feeds steps (in order) with the recording covering `[coverFrom, coverTo)`, advancing every 10 s.
    private func analyse(_ steps: [Double], cover: [(Double, Double)], configuration: ActivityAnalysis.Configuration = .init()) -> Run {
        var run = Run(analysis: ActivityAnalysis(configuration: configuration))
        for (from, to) in cover { run.analysis.cover(from: from, to: to) }
        var i = 0
        let end = (cover.map(\.1).max() ?? 0)
        var clock = 0.0
        while clock <= end {
            while i < steps.count && steps[i] <= clock {
                run.analysis.step(at: steps[i]) { run.bouts.append($0) }
                i += 1
            }
            run.analysis.advance(to: clock, minute: { run.minutes.append($0) }, bout: { run.bouts.append($0) })
            clock += 10
        }
        while i < steps.count { run.analysis.step(at: steps[i]) { run.bouts.append($0) }; i += 1 }
        run.analysis.finish(minute: { run.minutes.append($0) }, bout: { run.bouts.append($0) })
        return run
    }

    func testMinutesSumToTheTotalAndWalkingAndCadenceAreExact() {
        // 120 steps a minute (0.5 s apart) from 30 s to 150 s: 240 steps, 119.5 s of walking.
        let steps = train(from: 30, every: 0.5, count: 240)
        let run = analyse(steps, cover: [(0, 200)])
        XCTAssertEqual(run.minutes.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(run.minutes.map(\.steps), [60, 120, 60, 0])
        XCTAssertEqual(run.minutes.reduce(0) { $0 + $1.steps }, run.analysis.totalSteps)
        XCTAssertEqual(run.analysis.totalSteps, 240)
        XCTAssertEqual(run.minutes[0].walkingSeconds, 30, accuracy: 1e-9)
        XCTAssertEqual(run.minutes[1].walkingSeconds, 60, accuracy: 1e-9)
        XCTAssertEqual(run.minutes[2].walkingSeconds, 29.5, accuracy: 1e-9)
        for minute in run.minutes.prefix(3) { XCTAssertEqual(minute.cadenceStepsPerMinute, 120, accuracy: 1e-9) }
        XCTAssertEqual(run.minutes[3].cadenceStepsPerMinute, 0)
        XCTAssertEqual(run.minutes[3].recordedSeconds, 20, accuracy: 1e-9)
    }

    func testAPauseEndsWalkingAndABoutAndShortRunsAreNoBouts() {
        // 20 steps at 100/min, a 10 s pause, 5 steps (too few for a bout), a pause, 12 steps.
        let first = train(from: 5, every: 0.6, count: 20)
        let shuffle = train(from: first.last! + 10, every: 0.6, count: 5)
        let last = train(from: shuffle.last! + 10, every: 0.6, count: 12)
        let run = analyse(first + shuffle + last, cover: [(0, 120)])
        XCTAssertEqual(run.bouts.count, 2)
        XCTAssertEqual(run.bouts[0], ActivityBout(start: 5, end: first.last!, steps: 20))
        XCTAssertEqual(run.bouts[0].cadenceStepsPerMinute, 100, accuracy: 1e-9)
        XCTAssertEqual(run.bouts[1].steps, 12)
        XCTAssertEqual(run.analysis.bouts, 2)
        let walking = run.minutes.reduce(0) { $0 + $1.walkingSeconds }
        XCTAssertEqual(walking, 19 * 0.6 + 4 * 0.6 + 11 * 0.6, accuracy: 1e-9, "pauses are not walking")
    }

    func testPeakCadencesFollowTheLiteratureDefinitions() {
        // One day: 40 walking minutes at 60 + k steps (k = 0...39), steps spread evenly inside each minute.
        var steps: [Double] = []
        for k in 0..<40 {
            let count = 60 + k
            steps += train(from: Double(k) * 120 + 0.25, every: 59.5 / Double(count), count: count)
        }
        let run = analyse(steps, cover: [(0, 86_400)])
        let days = run.analysis.days
        XCTAssertEqual(days.count, 1)
        XCTAssertEqual(days[0].steps, steps.count)
        XCTAssertEqual(days[0].recordedMinutes, 1440)
        XCTAssertEqual(days[0].peakOneMinuteStepsPerMinute, 99)
        // The 30 highest: 70 ... 99, mean 84.5.
        XCTAssertEqual(days[0].peakThirtyMinuteStepsPerMinute!, 84.5, accuracy: 1e-9)
        XCTAssertEqual(days[0].bouts, 40)
    }

    func testFewerThanThirtyRecordedMinutesHaveNoPeakThirty() {
        let run = analyse(train(from: 1, every: 0.5, count: 100), cover: [(0, 600)])
        XCTAssertEqual(run.analysis.days[0].recordedMinutes, 10)
        XCTAssertNil(run.analysis.days[0].peakThirtyMinuteStepsPerMinute)
        XCTAssertEqual(run.analysis.days[0].peakOneMinuteStepsPerMinute, 100, "1 s to 50.5 s: all in minute 0")
    }

    func testDaysFollowTheCalendarGivenAndTheClockOffset() {
        var configuration = ActivityAnalysis.Configuration()
        configuration.clockOffsetSeconds = 86_400 * 3 - 300     // t = 0 is five minutes before midnight
        let steps = train(from: 200, every: 0.5, count: 400)   // 200 s to 400 s: across midnight
        let run = analyse(steps, cover: [(0, 1000)], configuration: configuration)
        XCTAssertEqual(run.analysis.days.map(\.day), [2, 3])
        XCTAssertEqual(run.analysis.days.map(\.steps), [200, 200])
        XCTAssertEqual(run.minutes.first?.index, (86_400 * 3 - 300) / 60)
        XCTAssertEqual(run.analysis.days[0].bouts + run.analysis.days[1].bouts, 1, "a bout is counted on the day it starts")
        XCTAssertEqual(run.analysis.days[0].bouts, 1)
    }

    func testAStepReportedAfterItsMinuteWasHandedOverStillCounts() {
        var analysis = ActivityAnalysis()
        var minutes: [MinuteBin] = []
        analysis.cover(from: 0, to: 400)
        analysis.step(at: 10) { _ in }
        analysis.advance(to: 400, minute: { minutes.append($0) }, bout: { _ in })
        analysis.step(at: 20) { _ in }      // far too late: minute 0 is gone
        analysis.finish(minute: { minutes.append($0) }, bout: { _ in })
        XCTAssertEqual(minutes.reduce(0) { $0 + $1.steps }, 2)
        XCTAssertEqual(analysis.lateSteps, 1)
    }

    func testTheTimelineLeavesGapsOutAndCarriesAClockThatJumpsBack() {
        var timeline = RecordingTimeline()
        var covered: [(Double, Double)] = []
        var events: [RecordingTimeline.Event] = []
        // 0.0 ... 0.4 at 10 Hz, then a 1-hour gap, then a jump back of 100 s.
        var samples = (0..<5).map { Sample(time: Double($0) / 10, x: 0, y: 0, z: 9.8) }
        samples += [3600.0, 3600.1, 3500.1, 3500.2].map { Sample(time: $0, x: 0, y: 0, z: 9.8) }
        timeline.repair(&samples, cover: { covered.append(($0, $1)) }, event: { events.append($0) })
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(events[0], .gap(index: 5, from: 0.4, to: 3600))
        guard case .clockBack(7, let back) = events[1] else { return XCTFail("\(events)") }
        XCTAssertEqual(back, 100, accuracy: 1e-6)
        XCTAssertEqual(samples.map(\.time)[5...].map { ($0 * 10).rounded() / 10 }, [3600, 3600.1, 3600.2, 3600.3],
                       "after the jump the clock carries on at the sample interval")
        XCTAssertEqual(timeline.gaps, 1)
        XCTAssertEqual(timeline.clockJumpsBack, 1)
        let recorded = covered.reduce(0) { $0 + $1.1 - $1.0 }
        XCTAssertEqual(recorded, 0.4 + 0.3, accuracy: 1e-9, "the hour not recorded is not covered")
    }

    /// One row whose clock goes back (a recorder's glitch) is set aside with the time of the row before; the
    /// rows after it keep their own times. Before, every later row was moved to follow on after the glitch: the
    /// rest of the file shifted forward by the jump (10^11 s here), and a jump back was reported.
    func testTheTimelineSetsASingleRowOutOfOrderAsideAndLeavesTheRestInPlace() {
        var timeline = RecordingTimeline()
        var events: [RecordingTimeline.Event] = []
        var samples = [0.0, 0.1, 0.2, -1e11, 0.3, 0.4].map { Sample(time: $0, x: 0, y: 0, z: 9.8) }
        timeline.repair(&samples, cover: { _, _ in }, event: { events.append($0) })
        XCTAssertEqual(samples.map(\.time), [0, 0.1, 0.2, 0.2, 0.3, 0.4])
        XCTAssertEqual(events, [])
        XCTAssertEqual(timeline.clockJumpsBack, 0)
        XCTAssertEqual(timeline.rowsOutOfOrder, 1)
        // Held across batches too: the row after it comes in the next batch.
        var next = [Sample(time: -7, x: 0, y: 0, z: 9.8)]
        timeline.repair(&next, cover: { _, _ in }, event: { events.append($0) })
        var after = [0.5, 0.6].map { Sample(time: $0, x: 0, y: 0, z: 9.8) }
        timeline.repair(&after, cover: { _, _ in }, event: { events.append($0) })
        XCTAssertEqual(after.map(\.time), [0.5, 0.6])
        XCTAssertEqual(timeline.rowsOutOfOrder, 2)
        XCTAssertEqual(events, [])
    }

    /// Minute and day indexes from any time, however corrupt: no trap converting to Int, and no loop that
    /// waits for a double to move by a minute where it no longer can (beyond 2^59 s a minute is below its
    /// resolution). The reader refuses such times first; the arithmetic is total regardless.
    func testMinutesAndDaysOfAbsurdTimesNeitherTrapNorHang() {
        for t in [1e20, 1e300, -1e300, 7e17, .nan] {
            var analysis = ActivityAnalysis()
            analysis.cover(from: t, to: t + 1e6)
            analysis.step(at: t) { _ in }
            analysis.step(at: t + 1) { _ in }
            var minutes: [MinuteBin] = []
            analysis.advance(to: t + 300, minute: { minutes.append($0) }, bout: { _ in })
            analysis.finish(minute: { minutes.append($0) }, bout: { _ in })
            XCTAssertEqual(analysis.totalSteps, 2, "\(t)")
            XCTAssertEqual(minutes.reduce(0) { $0 + $1.steps }, 2, "\(t): the minutes add up to the total")
        }
    }

    func testClampedIndexesAreTotal() {
        XCTAssertEqual(Int(flooringClamped: 1e300), 1 << 62)
        XCTAssertEqual(Int(flooringClamped: -.infinity), -(1 << 62))
        XCTAssertEqual(Int(flooringClamped: .nan), 0)
        XCTAssertEqual(Int(flooringClamped: -0.5), -1)
        XCTAssertEqual(Int(flooringClamped: 86_399.9 / 86_400), 0)
    }
}
