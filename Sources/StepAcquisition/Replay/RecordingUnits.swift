import Foundation
import StepProcessing

/// The unit of a recording's x, y, z. stepd's own format is m/s²; actipy, stepcount and the Axivity and
/// ActiGraph exports write g. `auto` takes the unit the header names (`x_g`, `x_mps2`), else the one the
/// gravity in the first samples says (`RecordingUnitsEstimate`).
public enum RecordingUnits: String, CaseIterable, Sendable {
    case auto
    case g
    case mps2

    /// What a sample's x, y, z are multiplied by to be m/s².
    var metersPerSecondSquaredPerUnit: Double { self == .g ? standardGravity : 1 }
}

/// Line 1 of a recording when it is a header: a time column (`t`, `time`) and x, y, z, all three with the
/// same unit suffix or none (`x_g,y_g,z_g`, `x_mps2,y_mps2,z_mps2`). Spaces and case do not count.
enum RecordingHeader {
    /// The unit the header names, `.auto` when it names none; nil when the line is not a header.
    static func units(of line: String) -> RecordingUnits? {
        let columns = line.replacingOccurrences(of: " ", with: "").lowercased()
            .split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard columns.count == 4, ["t", "time"].contains(columns[0]) else { return nil }
        for (units, suffix) in [(RecordingUnits.auto, ""), (.g, "_g"), (.mps2, "_mps2")]
            where columns.dropFirst() == ["x" + suffix, "y" + suffix, "z" + suffix] {
            return units
        }
        return nil
    }

    static let documented = "'t,x,y,z' (or 'time,x,y,z'; x_g,y_g,z_g or x_mps2,y_mps2,z_mps2 to name the unit)"
}

/// Which unit a recording whose header names none is in, from the gravity in its first samples: at rest or
/// walking, the median magnitude of the acceleration is about 1 g, 9.81 m/s² (a walk's swings are brief
/// beside it). A median from 0.5 to 2 is g; anything else is read as the format says, m/s².
struct RecordingUnitsEstimate {
    /// Samples looked at: 10 s at 100 Hz, 2.5 s at 400 Hz.
    static let sampleCount = 1000
    /// Median magnitudes read as g. m/s² gives 5 to 20 for the same range of devices (a scale off by 2 either
    /// way); between the two, and beyond, the file is taken at its word.
    static let gRange = 0.5...2.0

    /// The median magnitude of `samples`' accelerations, leaving out the all-zero rows some recorders write
    /// before the sensor starts and values that are not numbers; nil when none is left.
    static func medianMagnitude(_ samples: ArraySlice<Sample>) -> Double? {
        var magnitudes: [Double] = []
        magnitudes.reserveCapacity(samples.count)
        for sample in samples {
            let a = sample.acceleration
            let magnitude = (a.x * a.x + a.y * a.y + a.z * a.z).squareRoot()
            if magnitude > 0 && magnitude.isFinite { magnitudes.append(magnitude) }
        }
        guard !magnitudes.isEmpty else { return nil }
        magnitudes.sort()
        return magnitudes[magnitudes.count / 2]
    }

    /// The unit to read the recording in, and the notice to give when it is not the one stepd's format says.
    static func decide(_ asked: RecordingUnits, header: RecordingUnits, firstSamples: ArraySlice<Sample>,
                       path: String) -> (units: RecordingUnits, notice: String?) {
        if asked != .auto { return (asked, nil) }
        if header != .auto { return (header, nil) }
        guard let median = medianMagnitude(firstSamples), gRange.contains(median) else { return (.mps2, nil) }
        let figure = String(format: "%.2f", median)
        return (.g, "\(path): the accelerations look like g (median magnitude \(figure) over the first "
                    + "\(min(firstSamples.count, sampleCount)) samples): read as g, times 9.80665 (--units mps2 reads them as m/s²)")
    }
}
