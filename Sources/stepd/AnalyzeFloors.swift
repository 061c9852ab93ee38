import Foundation
import StepAcquisition
import StepProcessing

/// `stepd analyze`'s floors: the pressure file beside the recording (PressureFile.swift), counted with the
/// steps the pipeline found, by the code the daemon counts with (FloorCounter.counting).
enum AnalyzeFloors {
    /// Floors up and down, or nil when the recording has no pressure file beside it. A broken pressure
    /// file ends the command as a broken recording does: 66 unreadable, 65 bad content.
    static func count(recording: String, stepTimes: [Double]) throws -> (ascended: Int, descended: Int)? {
        guard let path = PressureFile.find(besideRecording: recording) else { return nil }
        do {
            let counter = FloorCounter.counting(stepTimes: stepTimes, pressure: try PressureFile.read(path: path))
            return (counter.ascended, counter.descended)
        } catch let error as PressureFileError {
            throw StartFailure(description: "\(error)", status: error.isMissingInput ? .noInput : .dataError).exit()
        }
    }
}
