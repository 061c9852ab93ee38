import Foundation

/// A point on the WGS-84 ellipsoid, in degrees.
public struct Coordinate: Sendable, Equatable {
    public var latitudeDegrees: Double
    public var longitudeDegrees: Double
    public init(latitudeDegrees: Double, longitudeDegrees: Double) {
        self.latitudeDegrees = latitudeDegrees
        self.longitudeDegrees = longitudeDegrees
    }
}

/// Great-circle math on a sphere of the Earth's mean radius: within 0.5 % of the ellipsoid, far below
/// the metres of GPS error that matter here.
public enum Geodesy {
    /// IUGG mean Earth radius R1 (Moritz, "Geodetic Reference System 1980").
    public static let earthRadiusMeters = 6_371_008.8

    /// Haversine distance; stable for the short hops of a walk, unlike the spherical law of cosines.
    public static func distanceMeters(_ a: Coordinate, _ b: Coordinate) -> Double {
        let phi1 = a.latitudeDegrees * .pi / 180
        let phi2 = b.latitudeDegrees * .pi / 180
        let dPhi = phi2 - phi1
        let dLambda = (b.longitudeDegrees - a.longitudeDegrees) * .pi / 180
        let h = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        return 2 * earthRadiusMeters * asin(min(1, sqrt(h)))
    }

    /// The point reached from `start` after `distanceMeters` along the great circle leaving at `bearingDegrees`.
    public static func destination(from start: Coordinate, distanceMeters: Double, bearingDegrees: Double) -> Coordinate {
        let delta = distanceMeters / earthRadiusMeters
        let theta = bearingDegrees * .pi / 180
        let phi1 = start.latitudeDegrees * .pi / 180
        let lambda1 = start.longitudeDegrees * .pi / 180
        let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
        let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
        var lon = lambda2 * 180 / .pi
        lon = (lon + 540).truncatingRemainder(dividingBy: 360) - 180
        return Coordinate(latitudeDegrees: phi2 * 180 / .pi, longitudeDegrees: lon)
    }

    /// Local east/north offsets (m) of `point` from `origin`: an equirectangular projection, exact enough
    /// within the few hundred metres of a stay.
    public static func offsetMeters(of point: Coordinate, from origin: Coordinate) -> (east: Double, north: Double) {
        var dLon = point.longitudeDegrees - origin.longitudeDegrees
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let metersPerDegree = earthRadiusMeters * .pi / 180
        return (dLon * metersPerDegree * cos(origin.latitudeDegrees * .pi / 180),
                (point.latitudeDegrees - origin.latitudeDegrees) * metersPerDegree)
    }

    /// The inverse of `offsetMeters`.
    public static func coordinate(east: Double, north: Double, from origin: Coordinate) -> Coordinate {
        let metersPerDegree = earthRadiusMeters * .pi / 180
        var lon = origin.longitudeDegrees + east / (metersPerDegree * cos(origin.latitudeDegrees * .pi / 180))
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Coordinate(latitudeDegrees: origin.latitudeDegrees + north / metersPerDegree, longitudeDegrees: lon)
    }
}
