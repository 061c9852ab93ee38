import Foundation
import Locking

/// The barometer read in the accelerometer's wake-ups (issue 29): a thread that wakes 4 times a second only to
/// read one sysfs file costs a battery device 4 wake-ups a second, while the accelerometer's thread wakes anyway
/// at each refill (1.5 times a second walking, once per 5 s still) and can make the read, a system call,
/// there for nothing more.
///
/// The barometer source keeps its device, its states and its faults (IIOSensorLoop): while an accelerometer
/// refills it hands a read (`lead`) to the accelerometer's thread and waits without a timer; the accelerometer
/// calls it after each refill (`refilled`). The read runs under this object's lock, so that the barometer
/// cannot take it back (and free its device) in the middle of it; its fault, or a read slower than
/// `slowReadSeconds`, takes it back from the accelerometer and wakes the barometer's thread, which reports the
/// fault or reads on its own from then on: a barometer that goes or stalls never holds the accelerometer up
/// for more than one read. With no accelerometer refilling (a replay, a polled one, one gone, its refill timed
/// out) the barometer reads on its own thread at its own rate. In the sensor step counter mode, with capture off,
/// the counter's reads stand for the refills (every 2 s walking, 5 s still).
final class IIOReadAlong: Sendable {
    /// The daemon's one pairing: its accelerometer source and its barometer source.
    static let shared = IIOReadAlong()

    /// Reads the barometer once and hands the reading over; throws the read's fault.
    typealias Read = @Sendable () throws -> Void

    /// A read that took longer than this holds the accelerometer up: the barometer reads on its own again.
    /// bmp280 in one-shot mode measures on each read (at most 43 ms at its highest resolution, its datasheet).
    static let slowReadSeconds = 0.25

    /// How a lead ended, for the barometer's thread (`release`).
    struct Outcome {
        /// The read's fault: the barometer's loop reports it.
        var fault: (any Error)?
        /// A read was slower than `slowReadSeconds`.
        var slow = false
    }

    private struct Lead {
        let read: Read
        let listener: SourceThread
        /// At most one read in this many seconds (the barometer's own rate).
        let minimumInterval: Double
        var lastRead = -Double.infinity
    }

    private struct State: @unchecked Sendable {   // unchecked: `fault` is an Error, only touched under the lock
        /// Refills a second of the accelerometer refilling now; nil when none is.
        var paceHz: Double?
        var lead: Lead?
        var outcome = Outcome()
        /// Bumped at each change the barometer's thread waits for: a pace, a lead taken back.
        var generation = 0
    }

    private let state = Locked(State())

    init() {}

    // MARK: The accelerometer's side

    /// After a refill: records the accelerometer's pace and reads the barometer if it handed a read over and
    /// its interval has passed. A fault or a slow read takes the read back and wakes the barometer's thread.
    func refilled(paceHz: Double, now: Double) {
        let wake: SourceThread? = state.withLock { s in
            var wake: SourceThread?
            if s.paceHz != paceHz {
                s.paceHz = paceHz
                s.generation += 1
                wake = s.lead?.listener
            }
            guard var lead = s.lead, now - lead.lastRead >= lead.minimumInterval * 0.9 else { return wake }
            lead.lastRead = now
            s.lead = lead
            let start = IIOTimeline.monotonicSeconds()
            do {
                try lead.read()
                if IIOTimeline.monotonicSeconds() - start <= Self.slowReadSeconds { return wake }
                s.outcome.slow = true
            } catch {
                s.outcome.fault = error
            }
            s.lead = nil
            s.generation += 1
            return lead.listener
        }
        wake?.wake()
    }

    /// The accelerometer stopped refilling (it ended, failed, or its refill timed out): the barometer's own thread
    /// takes over until it refills again.
    func stopped() {
        let wake: SourceThread? = state.withLock { s in
            guard s.paceHz != nil else { return nil }
            s.paceHz = nil
            s.generation += 1
            return s.lead?.listener
        }
        wake?.wake()
    }

    // MARK: The barometer's side

    /// Refills a second of the accelerometer refilling now, nil when none is.
    var paceHz: Double? { state.withLock { $0.paceHz } }

    /// Changes whenever the barometer's thread has something to look at (`wake` is called on `listener` then).
    var generation: Int { state.withLock { $0.generation } }

    /// Hands `read` to the accelerometer's thread, at most once per `minimumInterval` seconds; `listener` is
    /// woken when the lead ends or the pace changes. Returns the generation to wait on.
    func lead(listener: SourceThread, minimumInterval: Double, read: @escaping Read) -> Int {
        state.withLock { s in
            s.lead = Lead(read: read, listener: listener, minimumInterval: minimumInterval)
            s.outcome = Outcome()
            return s.generation
        }
    }

    /// Takes the read back (waiting for one in progress to end) and says how the lead went.
    func release() -> Outcome {
        state.withLock { s in
            s.lead = nil
            defer { s.outcome = Outcome() }
            return s.outcome
        }
    }
}
