/// An IIO device as a person names it: its id (`iio:device0`), the driver's name and the board's label.
/// One wording for logs, STATUS and `--list-devices`, and one rule for `--device`/`--barometer`.
public protocol IIONamed {
    var id: String { get }
    var name: String? { get }
    var label: String? { get }
}

extension IIONamed {
    /// "iio:device0 (bmi160, label accel-display)"
    public var displayName: String {
        var words = [name ?? "unnamed"]
        if let label { words.append("label \(label)") }
        return "\(id) (\(words.joined(separator: ", ")))"
    }

    /// True when `selector` is this device's id, name or label.
    public func matches(_ selector: String) -> Bool {
        selector == id || selector == name || (label != nil && selector == label)
    }
}
