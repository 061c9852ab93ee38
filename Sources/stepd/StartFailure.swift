import ArgumentParser
import Foundation
import StepAcquisition
import StepProtocol
import StepService

/// Why the daemon cannot start, as one sentence a person can act on and the exit status (sysexits.h,
/// docs/configuration.md "Exit status") that tells a script or systemd the cause.
struct StartFailure: Error, CustomStringConvertible {
    let description: String
    let status: ExitStatus

    /// Prints "stepd: <reason>" to stderr and gives the ExitCode that ends the process with the status.
    func exit() -> ExitCode {
        FileHandle.standardError.write(Data("stepd: \(description)\n".utf8))
        return ExitCode(status.rawValue)
    }

    /// A socket in use is another daemon's (75, worth retrying later); anything else about the socket is
    /// a place the daemon cannot create (73).
    static func serving(_ error: Error) -> StartFailure {
        switch error {
        case ServerError.socketInUse: return StartFailure(description: "\(error)", status: .tempFail)
        default: return StartFailure(description: "\(error)", status: .cantCreate)
        }
    }
}

/// A recording given to --replay, checked before it is read so that the failure says why: missing, a
/// directory, not readable (66), or not a recording (65).
enum RecordingCheck {
    static func check(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw cannotReplay(path, reason: errorText(errno), .noInput) }
        if info.st_mode & S_IFMT == S_IFDIR { throw cannotReplay(path, reason: "is a directory", .noInput) }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw cannotReplay(path, reason: errorText(errno), .noInput) }
        close(descriptor)
    }

    /// The reader's error with what the file is: a gzip file that yields nothing readable is corrupt.
    static func explain(_ error: Error, path: String) -> StartFailure {
        guard let error = error as? RecordingError else { return StartFailure(description: "\(error)", status: .dataError) }
        switch error {
        case .cannotOpen:
            return cannotReplay(path, reason: "cannot open it", .noInput)
        case .empty where startsWithGzipMagic(path):
            // zlib stops at the first corrupt block, so a damaged gzip file reads as one without samples.
            return cannotReplay(path, reason: "not a valid gzip file (corrupt data)", .dataError)
        case .badHeader(_, let found) where found.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" }:
            return cannotReplay(path, reason: "neither gzip nor t,x,y,z CSV text", .dataError)
        case .empty, .badHeader, .badLine:
            return StartFailure(description: "cannot replay \(error)", status: .dataError)
        }
    }

    private static func cannotReplay(_ path: String, reason: String, _ status: ExitStatus) -> StartFailure {
        StartFailure(description: "cannot replay \(path): \(reason)", status: status)
    }

    /// gzip's magic bytes 1f 8b (RFC 1952, 2.3.1).
    private static func startsWithGzipMagic(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 2)) ?? Data()
        return head == Data([0x1f, 0x8b])
    }

    static func errorText(_ number: Int32) -> String {
        let text = String(cString: strerror(number))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
