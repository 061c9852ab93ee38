import Foundation
import Logging
import StepProcessing
import Timekeeping

/// A kind of IIO sensor as the shared loop needs it: how to find one in a context. A new kind (a gyroscope) is
/// one of these plus a reader; the loop does the rest (docs/architecture.md, "Sensor sources").
protocol IIODiscoveryRule: Sendable {
    associatedtype Found: IIONamed
    /// What the device watcher's debug log says it waits for: "an accelerometer", "a barometer".
    var looking: String { get }
    /// The device `selector` names (id, name or label), or the first of its kind when nil. Throws
    /// `IIOError.isNoDevice` errors when there is none, any other IIOError when the context cannot be read.
    func find(uri: String, selector: String?) throws -> (IIODevice, Found)
}

/// The life of every IIO sensor source, on the source's own thread (SourceThread): find the device, read it
/// until it fails or the source stops, report what went wrong, wait, and start again.
/// - No device of the kind (or no IIO subsystem yet on a local context): `waiting`, woken by the device watcher
///   (IIODeviceWatcher) when one may have appeared, never by looking every second.
/// - A device that refuses the daemon within `IIOSensorRetry.udevGraceSeconds` of appearing: `waiting` for udev (a notice), not
///   `unavailable` (a warning): the refusal is expected at every plug-in and at boot.
/// - Busy (another reader holds it), disconnected (gone mid-stream), unavailable (anything else): reported once,
///   tried again every `IIOSensorRetry.retrySeconds`; found again, the next fault is news even if it is the same one.
/// - `running` is the reader's to say, once data flows; `finished` is said once the source stops.
struct IIOSensorLoop<Rule: IIODiscoveryRule> {
    let rule: Rule
    let uri: String
    let selector: String?
    let thread: SourceThread
    let logger: Logger

    /// Runs until the source stops. `report` gets each state worth telling (repeats of a fault are dropped);
    /// `read` reads the device found until the source stops (it returns) or a fault (it throws).
    func run(report: (SourceState) -> Void, read: (IIODevice, Rule.Found) throws -> Void) {
        // A local context can be watched for devices appearing; a remote iiod cannot, so it is asked again.
        let watcher = uri.hasPrefix("local") ? IIODeviceWatcher(logger: logger, looking: rule.looking) : nil
        var lastState: SourceState?
        // When the device was last found after being missing: a refusal soon after is udev not done yet.
        var appearedAt: Date?
        while !thread.isStopped {
            watcher?.drain()
            logger.trace("iio: looking for \(rule.looking) through \(uri)")
            var missing = false
            do {
                let (device, found) = try rule.find(uri: uri, selector: selector)
                if appearedAt == nil { appearedAt = SystemClock().now }
                // Found again: a fault from here on is news, even the same one as last time (a second
                // unplug after a quick replug would otherwise go unreported). The engine drops repeats.
                lastState = nil
                try read(device, found)
                lastState = nil
            } catch let error as IIOError {
                missing = IIOSensorRetry.isMissing(error, uri: uri)
                if missing || error.isDisconnection { appearedAt = nil }
                let state = IIOSensorRetry.state(for: error, missing: missing,
                                       sinceAppeared: appearedAt.map { SystemClock().now.timeIntervalSince($0) })
                // Report a fault once; retries of the same fault stay quiet (the engine logs transitions).
                if state != lastState { report(state) }
                lastState = state
            } catch {
                let state = SourceState.unavailable(reason: "\(error)")
                if state != lastState { report(state) }
                lastState = state
            }
            if waitBeforeRetry(deviceMissing: missing, watcher: watcher) { break }
        }
        report(.finished)
    }

    /// The pause before the next try: while the device is missing, until the watcher sees one appear (or its
    /// fallback period ends); while it is present but failing, `IIOSensorRetry.retrySeconds`. True if stopped.
    private func waitBeforeRetry(deviceMissing: Bool, watcher: IIODeviceWatcher?) -> Bool {
        if deviceMissing, let watcher { return watcher.wait(seconds: IIODeviceWatcher.fallbackSeconds, stop: thread) }
        return thread.wait(seconds: IIOSensorRetry.retrySeconds)
    }
}

/// How the loop (IIOSensorLoop) waits and what it reports: the same for every kind of IIO sensor.
enum IIOSensorRetry {
    /// Wait between attempts while the device is present but busy or failing.
    static let retrySeconds = 1.0
    /// How long a device that has just appeared may refuse the daemon (EACCES) before it is a fault: udev applies
    /// 60-stepd.rules (group stepd, mode 0660) a moment after the kernel made the node and woke the daemon;
    /// 1.5-2.7 s were seen when a HID sensor appeared during a systemd boot under QEMU.
    static let udevGraceSeconds = 10.0

    /// The state to report for a fault (IIOSensorLoop's comment says why the udev grace).
    static func state(for error: IIOError, missing: Bool, sinceAppeared: TimeInterval?) -> SourceState {
        if case .notPermitted(let device, _, _) = error, let sinceAppeared, sinceAppeared < udevGraceSeconds {
            return .waiting(reason: "\(device) has just appeared and is not readable yet: waiting for udev to give it "
                            + "to group stepd (60-stepd.rules)")
        }
        return error.sourceState(missing: missing)
    }

    /// No device of the kind (yet) on this machine: nothing to retry until one appears.
    static func isMissing(_ error: IIOError, uri: String) -> Bool {
        if error.isNoDevice { return true }
        // A local context with no IIO subsystem yet: the iio module is not loaded until a driver needs it.
        if case .contextUnavailable = error { return uri.hasPrefix("local") }
        return false
    }
}
