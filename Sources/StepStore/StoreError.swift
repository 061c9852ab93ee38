import Foundation
import StepProtocol

/// Why the store cannot keep history. None of these stops the daemon: counting goes on in memory and
/// STATUS shows the sentence.
public enum StoreError: CodedError, Equatable {
    case cannotCreateDirectory(path: String, reason: String)
    case cannotOpen(path: String, reason: String)
    case cannotWrite(path: String, reason: String)
    case cannotRead(path: String, reason: String)
    case unavailable(reason: String)
    /// A read refused because the store has failed (`reason`: STATUS's `store.error`).
    case failed(reason: String?)
    case lost(path: String, reason: String)
    case damagedLog(path: String, reason: String)
    /// A value read back outside its physical range (StoreRanges): the file is refused, left as it is.
    case outOfRange(path: String, reason: String)
    case tooManyRows(what: String, limit: Int)
    case rangeTooLong(bin: HistoryBinSize, maximumDays: Int)
    case emptyRange(from: Date, to: Date)

    /// The ERROR's code when a client's request meets this.
    public var code: ErrorCode {
        switch self {
        case .cannotCreateDirectory, .cannotOpen, .cannotWrite, .cannotRead, .lost, .damagedLog, .outOfRange, .failed: return .storeFailed
        case .unavailable: return .unavailable
        case .tooManyRows, .rangeTooLong: return .rangeTooLong
        case .emptyRange: return .badRequest
        }
    }

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
        case .failed(let reason):
            return "history is unavailable: the store is failed" + (reason.map { ": \($0)" } ?? "")
        case .lost(let path, let reason):
            return "lost the step database \(path): \(reason); counting goes on in memory and is saved when a database can be opened there again"
        case .damagedLog(let path, let reason):
            return "the write-ahead log \(path) is damaged (\(reason)); it is left as it is and counting goes on in memory (see docs/service.md, store faults)"
        case .outOfRange(let path, let reason):
            return "the step database \(path) holds a value outside its range (\(reason)); it is left as it is and counting goes on in memory: mend the row with sqlite3 or move the file away (see docs/service.md, store faults)"
        case .tooManyRows(let what, let limit):
            return "the range holds more than \(limit) \(what); ask for a shorter one"
        case .rangeTooLong(let bin, let days):
            let instead = bin == .minute ? "ask for hour or day bins" : bin == .hour ? "ask for day bins" : "ask in several requests"
            return "\(bin.rawValue) bins cover at most \(days) days per request; \(instead)"
        case .emptyRange(let from, let to):
            // Timestamp, not Date's description, which the Linux Foundation prints as "<description unavailable>".
            return "\"from\" (\(Timestamp.string(from))) must be before \"to\" (\(Timestamp.string(to)))"
        }
    }
}
