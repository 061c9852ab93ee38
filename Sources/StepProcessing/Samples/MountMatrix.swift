/// The kernel's mount matrix (`in_accel_mount_matrix`, `mount_matrix`): where the chip sits on the board.
/// Rows are the board's axes, so `board = M · chip`, as iio-sensor-proxy's accel-mount-matrix applies it.
/// The sysfs text is three rows separated by ";", each three numbers separated by ",":
/// "0, 1, 0; -1, 0, 0; 0, 0, 1" (Documentation/ABI/testing/sysfs-bus-iio, "mount_matrix").
public struct MountMatrix: Equatable, Sendable, CustomStringConvertible {
    public let rows: [Vector3]

    public static let identity = MountMatrix(uncheckedRows: [Vector3(x: 1, y: 0, z: 0),
                                                             Vector3(x: 0, y: 1, z: 0),
                                                             Vector3(x: 0, y: 0, z: 1)])

    private init(uncheckedRows: [Vector3]) { rows = uncheckedRows }

    /// A matrix from its three rows; a singular matrix would flatten an axis to zero and is refused.
    public init(rows: [Vector3]) throws {
        guard rows.count == 3, rows.allSatisfy({ $0.x.isFinite && $0.y.isFinite && $0.z.isFinite }) else {
            throw MountMatrixError.malformed(text: "\(rows)")
        }
        let m = MountMatrix(uncheckedRows: rows)
        guard abs(m.determinant) > 1e-6 else { throw MountMatrixError.singular(text: m.description) }
        self = m
    }

    /// Parses the sysfs text.
    public init(parsing text: String) throws {
        let rowTexts = text.split(separator: ";", omittingEmptySubsequences: false)
        var rows: [Vector3] = []
        for rowText in rowTexts {
            let numbers = rowText.split(separator: ",").map { Double($0.trimmingWhitespace()) }
            guard numbers.count == 3, let x = numbers[0], let y = numbers[1], let z = numbers[2] else {
                throw MountMatrixError.malformed(text: text)
            }
            rows.append(Vector3(x: x, y: y, z: z))
        }
        guard rows.count == 3 else { throw MountMatrixError.malformed(text: text) }
        do { try self.init(rows: rows) } catch MountMatrixError.singular { throw MountMatrixError.singular(text: text) }
    }

    public var isIdentity: Bool { self == .identity }

    public var determinant: Double {
        let (a, b, c) = (rows[0], rows[1], rows[2])
        return a.x * (b.y * c.z - b.z * c.y) - a.y * (b.x * c.z - b.z * c.x) + a.z * (b.x * c.y - b.y * c.x)
    }

    /// A chip-axes vector in the board's axes.
    @inlinable
    public func apply(_ chip: Vector3) -> Vector3 {
        Vector3(x: rows[0].dot(chip), y: rows[1].dot(chip), z: rows[2].dot(chip))
    }

    /// The sysfs spelling.
    public var description: String {
        rows.map { "\(Self.format($0.x)), \(Self.format($0.y)), \(Self.format($0.z))" }.joined(separator: "; ")
    }

    private static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}

public enum MountMatrixError: Error, Equatable, CustomStringConvertible {
    case malformed(text: String)
    case singular(text: String)

    public var description: String {
        switch self {
        case .malformed(let text):
            return "mount matrix '\(text)' is not three rows of three numbers (\"a, b, c; d, e, f; g, h, i\")"
        case .singular(let text):
            return "mount matrix '\(text)' is singular: it would flatten an axis to zero"
        }
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var s = self
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return s
    }
}
