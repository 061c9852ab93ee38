import Foundation

/// The path as documents other tools read: GeoJSON (RFC 7946) and GPX 1.1. Pure string builders.
public enum TrackExport {
    /// A GeoJSON Feature: a LineString of [lon, lat] positions (RFC 7946 §3.1.4 wants two or more), a
    /// Point for a single fix, no geometry for none. Times go in `properties.times`, one per position.
    /// `time` formats each point's time (the daemon passes its arithmetic formatter: a Foundation formatter per
    /// point made a day's track take seconds).
    public static func geoJSON(points: [TrackPoint], distanceMeters: Double,
                               time isoTime: @escaping (Date) -> String = TrackExport.isoTime) -> String {
        // An array's points cannot fail to be read.
        (try? TrackDocumentWriter(format: .geoJSON, points: points, distanceMeters: distanceMeters, time: isoTime).whole()) ?? ""
    }

    /// A GPX 1.1 document with one track and one segment; trkpt children in the schema's order
    /// (ele, time, fix, sat, hdop is not known here so it is left out).
    public static func gpx(points: [TrackPoint], distanceMeters: Double, creator: String = "stepd",
                           time isoTime: @escaping (Date) -> String = TrackExport.isoTime) -> String {
        (try? TrackDocumentWriter(format: .gpx(creator: creator), points: points, distanceMeters: distanceMeters,
                                  time: isoTime).whole()) ?? ""
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

/// Where a TrackDocumentWriter takes its points: an array, or pages read from a store as the document is
/// written, so that a day's path is never held whole for a client. Points are asked for in order from 0, and
/// a GeoJSON document asks for them twice (positions, then times).
public protocol TrackPointSource: Sendable {
    var count: Int { get }
    /// The point at `index`; throws when it can no longer be read (the store stopped or changed under it).
    mutating func point(at index: Int) throws -> TrackPoint
}

extension Array: TrackPointSource where Element == TrackPoint {
    public func point(at index: Int) -> TrackPoint { self[index] }
}

/// A track document written a piece at a time, so that a day's path (10 MB of GPX) can go out to a client as it
/// reads instead of being held whole for it (issue 25). `TrackExport.geoJSON` and `.gpx` are its pieces joined.
public struct TrackDocumentWriter {
    public enum Format {
        case geoJSON
        case gpx(creator: String)
    }

    private enum Part {
        case head, positions, middle, times, trackPoints, tail, done
    }

    private let format: Format
    private var points: any TrackPointSource
    private let distanceMeters: Double
    private let isoTime: (Date) -> String
    private var part = Part.head
    private var index = 0

    public init(format: Format, points: any TrackPointSource, distanceMeters: Double,
                time isoTime: @escaping (Date) -> String = TrackExport.isoTime) {
        self.format = format
        self.points = points
        self.distanceMeters = distanceMeters
        self.isoTime = isoTime
    }

    /// The next piece of at least `minimumBytes` (a point's text is never split), or nil when the document is out.
    public mutating func next(minimumBytes: Int) throws -> String? {
        var piece = ""
        while piece.utf8.count < minimumBytes, let unit = try nextUnit() { piece += unit }
        return piece.isEmpty ? nil : piece
    }

    /// The whole document at once.
    public func whole() throws -> String {
        var writer = self
        var text = ""
        while let piece = try writer.next(minimumBytes: 1 << 16) { text += piece }
        return text
    }

    /// A header, one point's text, or a footer.
    private mutating func nextUnit() throws -> String? {
        switch format {
        case .geoJSON: return try nextGeoJSONUnit()
        case .gpx(let creator): return try nextGPXUnit(creator: creator)
        }
    }

    private mutating func nextGeoJSONUnit() throws -> String? {
        switch part {
        case .head:
            part = points.count == 0 ? .middle : .positions
            switch points.count {
            case 0: return "{\"type\":\"Feature\",\"geometry\":null"
            case 1: return "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":"
            default: return "{\"type\":\"Feature\",\"geometry\":{\"type\":\"LineString\",\"coordinates\":["
            }
        case .positions:
            let p = try points.point(at: index)
            let text = (index > 0 ? "," : "")
                + "[\(TrackExport.decimal(p.coordinate.longitudeDegrees, 7)),\(TrackExport.decimal(p.coordinate.latitudeDegrees, 7))]"
            index += 1
            if index == points.count { (part, index) = (.middle, 0) }
            return text
        case .middle:
            part = points.count == 0 ? .tail : .times
            let close = points.count == 0 ? "" : points.count == 1 ? "}" : "]}"
            return close + ",\"properties\":{\"name\":\"stepd track\","
                + "\"distance_m\":\(TrackExport.decimal(distanceMeters, 1)),\"points\":\(points.count),\"times\":["
        case .times:
            let text = (index > 0 ? "," : "") + "\"\(isoTime(try points.point(at: index).time))\""
            index += 1
            if index == points.count { (part, index) = (.tail, 0) }
            return text
        case .tail:
            part = .done
            return "]}}"
        case .trackPoints, .done:
            return nil
        }
    }

    private mutating func nextGPXUnit(creator: String) throws -> String? {
        switch part {
        case .head:
            part = points.count == 0 ? .tail : .trackPoints
            var lines = [
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                "<gpx version=\"1.1\" creator=\"\(TrackExport.escape(creator))\" xmlns=\"http://www.topografix.com/GPX/1/1\" "
                    + "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                    + "xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">",
            ]
            if points.count > 0 {
                lines.append("  <metadata><time>\(isoTime(try points.point(at: 0).time))</time></metadata>")
            }
            lines.append("  <trk>")
            lines.append("    <name>stepd track</name>")
            lines.append("    <desc>distance \(TrackExport.decimal(distanceMeters, 1)) m</desc>")
            lines.append("    <trkseg>")
            return lines.joined(separator: "\n") + "\n"
        case .trackPoints:
            let p = try points.point(at: index)
            index += 1
            if index == points.count { (part, index) = (.tail, 0) }
            var children = ""
            if let alt = p.altitudeMSLMeters, alt.isFinite { children += "<ele>\(TrackExport.decimal(alt, 2))</ele>" }
            children += "<time>\(isoTime(p.time))</time>"
            children += "<fix>\(p.mode == .threeD ? "3d" : "2d")</fix>"
            if p.satellitesUsed > 0 { children += "<sat>\(p.satellitesUsed)</sat>" }
            return "      <trkpt lat=\"\(TrackExport.decimal(p.coordinate.latitudeDegrees, 7))\" "
                + "lon=\"\(TrackExport.decimal(p.coordinate.longitudeDegrees, 7))\">\(children)</trkpt>\n"
        case .tail:
            part = .done
            return "    </trkseg>\n  </trk>\n</gpx>\n"
        case .positions, .middle, .times, .done:
            return nil
        }
    }
}
