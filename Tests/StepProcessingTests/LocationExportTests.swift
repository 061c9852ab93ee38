import Foundation
import XCTest
@testable import StepProcessing
#if canImport(FoundationXML)
import FoundationXML
#endif

final class LocationExportTests: XCTestCase {
    private func walk() -> TrackBuilder {
        var track = TrackBuilder()
        for i in 0..<30 { track.add(FixFactory.fix(second: Double(i), east: Double(i) * 1.4, north: Double(i))) }
        return track
    }

    func testGeoJSONIsALineStringOfLonLatPositions() throws {
        let track = walk()
        let text = TrackExport.geoJSON(points: track.points, distanceMeters: track.distanceMeters)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertEqual(object["type"] as? String, "Feature")
        let geometry = try XCTUnwrap(object["geometry"] as? [String: Any])
        XCTAssertEqual(geometry["type"] as? String, "LineString")
        let coordinates = try XCTUnwrap(geometry["coordinates"] as? [[Double]])
        XCTAssertEqual(coordinates.count, 30)
        // RFC 7946: longitude first.
        XCTAssertEqual(coordinates[0][0], track.points[0].coordinate.longitudeDegrees, accuracy: 1e-7)
        XCTAssertEqual(coordinates[0][1], track.points[0].coordinate.latitudeDegrees, accuracy: 1e-7)
        let properties = try XCTUnwrap(object["properties"] as? [String: Any])
        XCTAssertEqual((properties["times"] as? [String])?.count, 30)
        XCTAssertEqual(properties["distance_m"] as? Double ?? -1, track.distanceMeters, accuracy: 0.05)
    }

    func testGeoJSONWithFewerThanTwoPointsIsStillValid() throws {
        let none = TrackExport.geoJSON(points: [], distanceMeters: 0)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(none.utf8)) as? [String: Any])
        XCTAssertTrue(object["geometry"] is NSNull)
        var one = TrackBuilder()
        one.add(FixFactory.fix(second: 0))
        let point = TrackExport.geoJSON(points: one.points, distanceMeters: 0)
        let geometry = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(point.utf8)) as? [String: Any])?["geometry"] as? [String: Any])
        XCTAssertEqual(geometry["type"] as? String, "Point")
    }

    func testGPXIsWellFormedVersionOnePointOneWithEveryPoint() throws {
        let track = walk()
        let text = TrackExport.gpx(points: track.points, distanceMeters: track.distanceMeters, creator: "stepd <test> & co")
        let collector = GPXCollector()
        let parser = XMLParser(data: Data(text.utf8))
        parser.shouldProcessNamespaces = true
        parser.delegate = collector
        XCTAssertTrue(parser.parse(), "GPX does not parse: \(String(describing: parser.parserError))")
        XCTAssertEqual(collector.rootName, "gpx")
        XCTAssertEqual(collector.rootNamespace, "http://www.topografix.com/GPX/1/1")
        XCTAssertEqual(collector.version, "1.1")
        XCTAssertEqual(collector.creator, "stepd <test> & co")
        XCTAssertEqual(collector.points.count, 30)
        XCTAssertEqual(collector.points[5].lat, track.points[5].coordinate.latitudeDegrees, accuracy: 1e-7)
        XCTAssertEqual(collector.points[5].lon, track.points[5].coordinate.longitudeDegrees, accuracy: 1e-7)
        XCTAssertEqual(collector.times.first, "2024-05-01T10:00:00.000Z")
        // GPX 1.1's wptType sequence: ele before time before fix before sat.
        XCTAssertEqual(collector.childOrder.first, ["ele", "time", "fix", "sat"])
    }
}

private final class GPXCollector: NSObject, XMLParserDelegate {
    var rootName: String?
    var rootNamespace: String?
    var version: String?
    var creator: String?
    var points: [(lat: Double, lon: Double)] = []
    var times: [String] = []
    var childOrder: [[String]] = []
    private var inPoint = false
    private var text = ""

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if rootName == nil {
            rootName = name
            rootNamespace = namespaceURI
            version = attributes["version"]
            creator = attributes["creator"]
        }
        if name == "trkpt" {
            points.append((Double(attributes["lat"] ?? "") ?? .nan, Double(attributes["lon"] ?? "") ?? .nan))
            childOrder.append([])
            inPoint = true
        } else if inPoint {
            childOrder[childOrder.count - 1].append(name)
        }
        text = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "trkpt" { inPoint = false }
        if name == "time", inPoint { times.append(text) }
    }
}
