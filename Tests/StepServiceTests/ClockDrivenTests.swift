import Foundation
import Locking
import Logging
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProcessing
@testable import StepServer
@testable import StepService
@testable import StepStore
import TestSupport
import Timekeeping
import XCTest

/// What the daemon does with time, driven by a ManualClock: a local midnight, a walk that stalls, a commit within
/// 2 s, a GPS fix that grows stale. Nothing here sleeps or waits on the wall clock; each test moves the clock by
/// hand and looks at the state the timers left.
final class ClockDrivenTests: XCTestCase {
    /// Local midnight starts today's figures from zero and tells the PEDOMETER watchers, with no sample to do it.
    func testMidnightStartsANewDayWithoutASample() {
        let zone = Engine.daemonZone
        let tomorrow = zone.interval(of: .day, containing: Date()).end
        let clock = ManualClock(wall: tomorrow.addingTimeInterval(-5))
        let engine = Engine(clock: clock)
        let events = EventLog()
        engine.register(events)
        engine.drain()
        let yesterday = engine.snapshot.today.start
        XCTAssertLessThan(yesterday, tomorrow)

        clock.advance(by: 4)
        engine.drain()
        XCTAssertEqual(engine.snapshot.today.start, yesterday, "not yet")
        XCTAssertEqual(events.pedometerCount, 0)

        clock.advance(by: 2)
        engine.drain()
        XCTAssertEqual(engine.snapshot.today.start, tomorrow)
        XCTAssertEqual(events.pedometerCount, 1, "the watchers hear of the new day")
        XCTAssertEqual(clock.scheduledCount, 1, "and the next midnight is set")
        XCTAssertEqual(clock.nextDeadlineIn ?? 0, 86_400, accuracy: 3_600)
    }

    /// A local midnight crossed while walking: today starts at midnight and counts the steps after it (each at
    /// its own time, whenever the detector reported it), the count since the reset goes on, and the PEDOMETER
    /// watchers hear of the new day.
    func testMidnightCrossedWhileWalkingStartsTodayAtTheFirstStepAfterIt() throws {
        let zone = Engine.daemonZone
        let midnight = zone.interval(of: .day, containing: Date()).end
        let clock = ManualClock(wall: midnight.addingTimeInterval(-10))
        let engine = Engine(clock: clock)
        let events = EventLog()
        engine.register(events)
        engine.drain()
        // 20 s of walking at 1.8 steps a second, in half-second batches that arrive as the clock reaches their end.
        let rateHz = 100.0
        for batch in 0..<40 {
            let start = Double(batch) * 0.5
            clock.advance(by: 0.5)
            engine.receive(stride(from: start, to: start + 0.5, by: 1 / rateHz).map { t in
                Sample(time: t, x: 0.3, y: 0.2, z: 9.81 + 3 * sin(2 * .pi * 1.8 * t))
            })
        }
        engine.drain()
        let steps = events.steps
        let lastBefore = try XCTUnwrap(steps.last { $0.time < midnight }, "no step before midnight").count
        let snapshot = engine.snapshot
        XCTAssertGreaterThan(lastBefore, 5)
        XCTAssertGreaterThan(snapshot.steps - lastBefore, 5)
        XCTAssertEqual(snapshot.today.start, midnight)
        XCTAssertEqual(snapshot.today.steps, snapshot.steps - lastBefore, "today is the steps after midnight")
        XCTAssertEqual(snapshot.steps, steps.last?.count, "the count since the reset goes on")
        XCTAssertTrue(events.pedometerDays.contains(midnight), "a PEDOMETER of the new day")
    }

    /// Steps that stop with the samples: 4 s later the walk ends and the cadence falls to zero.
    func testAStalledWalkEndsFourSecondsAfterItsLastSteps() {
        let clock = ManualClock()
        let engine = Engine(clock: clock)
        let events = EventLog()
        engine.register(events)
        engine.receive(stride(from: 0.0, to: 20, by: 0.01).map { t in
            Sample(time: t, x: 0.3, y: 0.2, z: 9.81 + 3 * sin(2 * .pi * 1.8 * t))
        })
        engine.drain()
        let walking = engine.snapshot
        XCTAssertGreaterThan(walking.steps, 20)
        XCTAssertEqual(walking.activity, .walking)

        clock.advance(by: Engine.stallSeconds - 0.5)
        engine.drain()
        XCTAssertEqual(engine.snapshot.activity, .walking, "not yet")

        clock.advance(by: 1)
        engine.drain()
        let stalled = engine.snapshot
        XCTAssertEqual(stalled.cadenceStepsPerMinute, 0)
        XCTAssertEqual(stalled.activity, .stationary)
        XCTAssertEqual(stalled.steps, walking.steps, "the count stays")
        XCTAssertTrue(events.stationary, "the watchers hear that the walk stopped")
    }

    /// A step recorded alone reaches the database when the commit interval (2 s) has passed, not before.
    func testAStepIsCommittedWithinTheCommitInterval() throws {
        let directory = NSTemporaryDirectory() + "stepd-clock-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock()
        let store = StepStore(configuration: .init(directory: directory, stepHoldBackSeconds: 1), clock: clock,
                              logger: Logger(label: "test"))
        _ = store.open(fresh: .init(steps: 0, since: clock.now))
        store.startCommitting()
        clock.advance(by: 0.1)   // the fresh counter's own commit, if any
        let before = store.status.lastCommit
        let recorded = clock.now
        store.record(.step(count: 1, time: recorded, distanceMeters: 0.7))

        clock.advance(by: 1)
        XCTAssertEqual(store.status.lastCommit, before, "batched: it waits for more writes")
        clock.advance(by: store.configuration.commitIntervalSeconds - 1)
        let committed = try XCTUnwrap(store.status.lastCommit)
        XCTAssertNotEqual(committed, before)
        XCTAssertLessThanOrEqual(committed.timeIntervalSince(recorded), store.configuration.commitIntervalSeconds)
        let bins = try store.history(from: clock.now.addingTimeInterval(-120), to: clock.now.addingTimeInterval(60), size: .minute)
        XCTAssertEqual(bins.map(\.steps).reduce(0, +), 1)
        _ = store.close()
    }

    /// No fix for 10 s: STATUS says stale and the journal says it once, however long it lasts.
    func testAFixGrowsStaleAfterTenSecondsAndIsLoggedOnce() {
        let clock = ManualClock()
        let lines = LogLines()
        let engine = Engine(clock: clock, logger: Logger(label: "test") { _ in lines })
        engine.gpsConnectionChanged(.connected)
        // The first report after connecting may be gpsd's cached fix: the position counts once time moves on.
        for step in 0..<2 {
            if step > 0 { clock.advance(by: 1) }
            engine.receive(fix: Fix(time: clock.now, mode: .threeD, latitudeDegrees: 52.2, longitudeDegrees: 0.1,
                                    ephMeters: 5, satellitesUsed: 8, arrival: clock.now))
            engine.drain()
        }
        XCTAssertEqual(engine.locationSnapshot.state(now: clock.now), .fix)

        clock.advance(by: GPSState.staleAfterSeconds - 1)
        engine.drain()
        XCTAssertEqual(lines.matching("gps: stale"), 0)

        clock.advance(by: 2)
        engine.drain()
        XCTAssertEqual(engine.locationSnapshot.state(now: clock.now), .stale)
        XCTAssertEqual(lines.matching("gps: stale"), 1)

        clock.advance(by: 600)
        engine.drain()
        XCTAssertEqual(lines.matching("gps: stale"), 1, "once, not again and again")
    }

    /// A broker that refuses: the client tries again after 1, 2, 4, 8, 8 s (a doubling back-off up to its
    /// longest), each attempt when the clock reaches it and not before. A real libmosquitto connects to a port
    /// on 127.0.0.1 that nobody listens on.
    func testTheBrokerIsTriedAgainAfterADoublingBackOff() throws {
        let clock = ManualClock()
        let waits = Locked<[Int]>([])
        let attempted = DispatchSemaphore(value: 0)
        let client = try MQTTClient(clientID: "stepd-test", clock: clock, callbacks: .init(
            connected: { _ in }, disconnected: { _ in }, acknowledged: { _ in },
            waiting: { _, seconds in
                waits.withLock { $0.append(seconds) }
                attempted.signal()
            }))
        client.start(host: "127.0.0.1", port: try Self.refusedPort(), keepaliveSeconds: 60,
                     backoff: .init(firstSeconds: 1, longestSeconds: 8))
        defer { client.stop() }
        XCTAssertEqual(attempted.wait(timeout: .now() + 30), .success, "the first attempt is made at once")
        for _ in 0..<4 {
            let wait = Double(waits.withLock { $0.last! })
            clock.advance(by: wait - 0.5)
            // A bound on a wrong attempt, not a measurement: a slow machine can only hide one, never invent it.
            XCTAssertEqual(attempted.wait(timeout: .now() + 0.2), .timedOut, "no attempt before the back-off ends")
            clock.advance(by: 0.5)
            XCTAssertEqual(attempted.wait(timeout: .now() + 30), .success)
        }
        XCTAssertEqual(waits.withLock { $0 }, [1, 2, 4, 8, 8])
    }

    /// A port on 127.0.0.1 that was free a moment ago: a connection to it is refused.
    private static func refusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The events an engine raised, as an observer sees them.
final class EventLog: EngineObserver {
    private let events = Locked<[EngineEvent]>([])

    func engine(_ engine: Engine, emitted event: EngineEvent) { events.withLock { $0.append(event) } }

    var pedometerCount: Int {
        events.withLock { $0.filter { if case .pedometer = $0 { true } else { false } }.count }
    }

    var steps: [(count: Int, time: Date)] {
        events.withLock { $0.compactMap { if case let .step(count, time, _) = $0 { (count, time) } else { nil } } }
    }

    /// The `today.start` of each PEDOMETER.
    var pedometerDays: [Date] {
        events.withLock { $0.compactMap { if case .pedometer(let snapshot) = $0 { snapshot.today.start } else { nil } } }
    }

    var stationary: Bool {
        events.withLock { $0.contains { if case .activity(.stationary, _) = $0 { true } else { false } } }
    }
}

/// A log handler that keeps the messages.
final class LogLines: LogHandler, @unchecked Sendable {
    private let lines = Locked<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { lines.withLock { $0.append("\(event.message)") } }

    func matching(_ text: String) -> Int { lines.withLock { $0.filter { $0.contains(text) }.count } }
}

/// The production clock's fire-and-forget timer: dropped by its caller, it fires all the same; cancelled, never.
final class SystemClockTimerTests: XCTestCase {
    func testARunTimerFiresThoughItsCallerDroppedIt() {
        let fired = expectation(description: "fired")
        SystemClock().run(after: 0.01, on: .global()) { fired.fulfill() }
        wait(for: [fired], timeout: 30)
    }

    func testACancelledRunTimerDoesNotFire() {
        let fired = Locked(false)
        let timer = SystemClock().run(after: 0.2, on: .global()) { fired.withLock { $0 = true } }
        timer.cancel()
        let later = expectation(description: "a later timer")
        SystemClock().run(after: 0.5, on: .global()) { later.fulfill() }
        wait(for: [later], timeout: 30)
        XCTAssertFalse(fired.withLock { $0 })
    }
}

/// `DaemonClock.sleep`, the async wait of stepd-web's reconnects: it ends when the clock reaches it, at once
/// when its task is cancelled.
final class ClockSleepTests: XCTestCase {
    func testASleepEndsWhenTheManualClockReachesIt() async throws {
        let clock = ManualClock()
        let done = Locked(false)
        let sleeper = Task {
            try await clock.sleep(seconds: 5)
            done.withLock { $0 = true }
        }
        for _ in 0..<10_000 where clock.scheduledCount == 0 { await Task.yield() }
        XCTAssertEqual(clock.scheduledCount, 1, "the sleep set its timer")
        clock.advance(by: 4.9)
        XCTAssertFalse(done.withLock { $0 })
        clock.advance(by: 0.2)
        try await sleeper.value
        XCTAssertTrue(done.withLock { $0 })
    }

    func testACancelledSleepThrowsAtOnce() async {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(seconds: 3600) }
        sleeper.cancel()
        do {
            try await sleeper.value
            XCTFail("a cancelled sleep returned")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }
}
