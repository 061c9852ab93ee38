import Foundation
import StepProcessing
import StepProtocol

extension Replies {
    /// STEPS (and PEDOMETER, with `asClass`) from the engine's published snapshot.
    public static func steps(_ s: EngineSnapshot, id: JSONValue?, asClass name: String = "STEPS") -> StepsMessage {
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
}
