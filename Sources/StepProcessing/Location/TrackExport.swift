import Foundation

/// The path as documents other tools read: GeoJSON (RFC 7946) and GPX 1.1. Pure string builders.
public enum TrackExport {
    /// A GeoJSON Feature: a LineString of [lon, lat] positions (RFC 7946 §3.1.4 wants two or more), a
    /// Point for a single fix, no geometry for none. Times go in `properties.times`, one per position.
    /// `time` formats each point's time (the daemon passes its arithmetic formatter: a Foundation formatter per
    /// point made a day's track take seconds).
    public static func geoJSON(points: [TrackPoint], distanceMeters: Double,
                               time isoTime: (Date) -> String = TrackExport.isoTime) -> String {
        let positions = points.map { "[\(decimal($0.coordinate.longitudeDegrees, 7)),\(decimal($0.coordinate.latitudeDegrees, 7))]" }
        let geometry: String
        switch positions.count {
        case 0: geometry = "null"
        case 1: geometry = "{\"type\":\"Point\",\"coordinates\":\(positions[0])}"
        default: geometry = "{\"type\":\"LineString\",\"coordinates\":[\(positions.joined(separator: ","))]}"
        }
        let times = points.map { "\"\(isoTime($0.time))\"" }.joined(separator: ",")
        return "{\"type\":\"Feature\",\"geometry\":\(geometry),\"properties\":{\"name\":\"stepd track\","
            + "\"distance_m\":\(decimal(distanceMeters, 1)),\"points\":\(points.count),\"times\":[\(times)]}}"
    }

    /// A GPX 1.1 document with one track and one segment; trkpt children in the schema's order
    /// (ele, time, fix, sat, hdop is not known here so it is left out).
    public static func gpx(points: [TrackPoint], distanceMeters: Double, creator: String = "stepd",
                           time isoTime: (Date) -> String = TrackExport.isoTime) -> String {
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<gpx version=\"1.1\" creator=\"\(escape(creator))\" xmlns=\"http://www.topografix.com/GPX/1/1\" "
                + "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                + "xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">",
        ]
        if let first = points.first {
            lines.append("  <metadata><time>\(isoTime(first.time))</time></metadata>")
        }
        lines.append("  <trk>")
        lines.append("    <name>stepd track</name>")
        lines.append("    <desc>distance \(decimal(distanceMeters, 1)) m</desc>")
        lines.append("    <trkseg>")
        for p in points {
            var children = ""
            if let alt = p.altitudeMSLMeters, alt.isFinite { children += "<ele>\(decimal(alt, 2))</ele>" }
            children += "<time>\(isoTime(p.time))</time>"
            children += "<fix>\(p.mode == .threeD ? "3d" : "2d")</fix>"
            if p.satellitesUsed > 0 { children += "<sat>\(p.satellitesUsed)</sat>" }
            lines.append("      <trkpt lat=\"\(decimal(p.coordinate.latitudeDegrees, 7))\" "
                         + "lon=\"\(decimal(p.coordinate.longitudeDegrees, 7))\">\(children)</trkpt>")
        }
        lines.append("    </trkseg>")
        lines.append("  </trk>")
        lines.append("</gpx>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Fixed-point text, never exponent notation (GPX's xsd:decimal forbids it).
    static func decimal(_ value: Double, _ places: Int) -> String {
        String(format: "%.\(places)f", value)
    }

    /// ISO-8601 UTC with milliseconds, as gpsd's TPV time.
    public static func isoTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
