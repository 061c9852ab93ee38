import Foundation
import StepProcessing

/// Builds the protocol's messages from the daemon's values (StepEngine adds STEPS from its snapshot).
public enum Replies {
    public static func motion(_ m: MotionEstimate, time: Date) -> MotionMessage {
        MotionMessage(time: Timestamp.string(time), pitch_deg: rounded(m.pitchDegrees, 2), roll_deg: rounded(m.rollDegrees, 2),
                      vertical_accel: rounded(m.verticalAcceleration, 4), vibration_rms: rounded(m.vibrationRMS, 4))
    }

    /// A bout as BOUT, the history and the fleet give it, rounded as `stepd analyze`'s bouts.csv.
    public static func bout(_ measured: GaitBout, start: Date, end: Date, placement: Placement) -> BoutMessage {
        let bout = measured.bout, gait = measured.gait.rounded()
        return BoutMessage(start: Timestamp.string(start), end: Timestamp.string(end), steps: bout.steps,
                           duration_s: rounded(bout.durationSeconds, 3), cadence_spm: rounded(bout.cadenceStepsPerMinute, 1),
                           stride_time_s: gait.strideTimeSeconds, stride_time_cv: gait.strideTimeCV, regularity: gait.regularity,
                           symmetry: gait.symmetry, step_length_m: gait.stepLengthMeters, speed_mps: gait.speedMetersPerSecond,
                           placement: placement.rawValue)
    }

    public static func rounded(_ value: Double, _ decimals: Int) -> Double {
        let scale = pow(10, Double(decimals))
        return (value * scale).rounded() / scale
    }
}
