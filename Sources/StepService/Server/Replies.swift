import Foundation
import StepProcessing
import StepProtocol

/// Builds the protocol's messages from the engine's published snapshot.
enum Replies {
    static func steps(_ s: EngineSnapshot, id: JSONValue?, asClass name: String = "STEPS") -> StepsMessage {
        var message = StepsMessage(
            steps: s.steps, since: Timestamp.string(s.since), cadence_spm: rounded(s.cadenceStepsPerMinute, 1),
            distance_m: rounded(s.distanceMeters, 2), detector: s.detector, start: Timestamp.string(s.since),
            end: Timestamp.string(max(s.end, s.since)), current_pace_s_per_m: s.currentPaceSecondsPerMeter.map { rounded($0, 3) },
            average_active_pace_s_per_m: s.averageActivePaceSecondsPerMeter.map { rounded($0, 3) },
            stride_m: rounded(s.strideMeters, 3), stride_calibrated: s.strideCalibrated, activity: s.activity.rawValue,
            floors_ascended: s.floorsAscended, floors_descended: s.floorsDescended, hardware_steps: s.hardwareSteps, id: id)
        message.class = name
        message.today = s.todayMessage
        return message
    }

    static func motion(_ m: MotionEstimate, time: Date) -> MotionMessage {
        MotionMessage(time: Timestamp.string(time), pitch_deg: rounded(m.pitchDegrees, 2), roll_deg: rounded(m.rollDegrees, 2),
                      vertical_accel: rounded(m.verticalAcceleration, 4), vibration_rms: rounded(m.vibrationRMS, 4))
    }

    /// A bout as BOUT, the history and the fleet give it, rounded as `stepd analyze`'s bouts.csv.
    static func bout(_ measured: GaitBout, start: Date, end: Date, placement: Placement) -> BoutMessage {
        let bout = measured.bout, gait = measured.gait.rounded()
        return BoutMessage(start: Timestamp.string(start), end: Timestamp.string(end), steps: bout.steps,
                           duration_s: rounded(bout.durationSeconds, 3), cadence_spm: rounded(bout.cadenceStepsPerMinute, 1),
                           stride_time_s: gait.strideTimeSeconds, stride_time_cv: gait.strideTimeCV, regularity: gait.regularity,
                           symmetry: gait.symmetry, step_length_m: gait.stepLengthMeters, speed_mps: gait.speedMetersPerSecond,
                           placement: placement.rawValue)
    }

    static func rounded(_ value: Double, _ decimals: Int) -> Double {
        let scale = pow(10, Double(decimals))
        return (value * scale).rounded() / scale
    }
}
