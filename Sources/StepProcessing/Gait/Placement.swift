/// Where the device is carried. Gait measures care because only a device on the trunk near the body's centre
/// of mass (the lower back or a belt at the waist) moves up and down with it, which the inverted pendulum
/// model needs for step length and walking speed (docs/gait.md); the walking gate cares because only a device
/// that may be in a hand must be told from a hand at work.
public enum Placement: String, CaseIterable, Sendable {
    /// Not said: length and speed are given only for a bout whose signal shows a device at the waist
    /// (`GaitRecorder`, docs/gait.md "Placement").
    case auto
    case wrist
    case pocket
    case hand
    case bag
    /// At the lower back or on a belt at the waist.
    case waist

    public static let `default` = Placement.auto

    /// Whether the configured placement gives step length and speed whatever the signal says.
    public var carriesCentreOfMass: Bool { self == .waist }

    /// Whether the device may be in a hand at work (brushing, combing, pouring), which the walking gate must
    /// tell from a walk by how the device turns (`WalkingGate`). Not said (`auto`) counts as may be.
    public var mayBeInAWorkingHand: Bool {
        switch self {
        case .auto, .wrist, .hand: return true
        case .pocket, .bag, .waist: return false
        }
    }
}
