import Foundation

/// Why the store cannot keep history. None of these stops the daemon: counting goes on in memory and
/// STATUS shows the sentence.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case cannotCreateDirectory(path: String, reason: String)
    case cannotOpen(path: String, reason: String)
    case cannotWrite(path: String, reason: String)
    case cannotRead(path: String, reason: String)
    case unavailable(reason: String)
    case rangeTooLong(bin: HistoryBinSize, maximumDays: Int)
    case emptyRange(from: Date, to: Date)

    public var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let reason):
            return "cannot create the state directory \(path): \(reason)"
        case .cannotOpen(let path, let reason):
            return "cannot open the step database \(path): \(reason)"
        case .cannotWrite(let path, let reason):
            return "cannot write to the step database \(path): \(reason); counting goes on in memory"
        case .cannotRead(let path, let reason):
            return "cannot read the step database \(path): \(reason)"
        case .unavailable(let reason):
            return "history is unavailable: \(reason)"
        case .rangeTooLong(let bin, let days):
            return "\(bin.rawValue) bins cover at most \(days) days per request; ask for \(bin == .minute ? "hour or day" : "day") bins"
        case .emptyRange(let from, let to):
            return "\"from\" (\(from)) must be before \"to\" (\(to))"
        }
    }
}
