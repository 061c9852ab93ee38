import Foundation
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// The socket's mode and group after bind (ProtocolServer.setPermissions): what fails is said, with errno's
/// words, rather than ignored.
final class ServerSocketPermissionsTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("stepd-perm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testASocketThatVanishedAfterBindIsReportedForItsModeAndItsGroup() {
        let path = directory.appendingPathComponent("gone.sock").path
        // "root" exists everywhere, so the group is looked up and the chown is attempted.
        let problems = ProtocolServer.setPermissions(path: path, mode: 0o660, group: "root")
        XCTAssertEqual(problems.count, 2, "\(problems)")
        XCTAssertTrue(problems[0].hasPrefix("cannot set the mode of \(path) to 660: No such file or directory"), problems[0])
        XCTAssertTrue(problems[1].hasPrefix("cannot give \(path) to group root: No such file or directory"), problems[1])
    }

    func testModeAndGroupAreSetWithoutAWordWhenTheyCanBe() throws {
        let path = directory.appendingPathComponent("stepd.sock").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]))
        let ownGroup = String(cString: getgrgid(getegid())!.pointee.gr_name)
        XCTAssertEqual(ProtocolServer.setPermissions(path: path, mode: 0o640, group: ownGroup), [])
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o640)
        XCTAssertEqual(info.st_gid, getegid())
    }

    func testAGroupThatDoesNotExistIsNotAttempted() throws {
        let path = directory.appendingPathComponent("stepd.sock").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        XCTAssertEqual(ProtocolServer.setPermissions(path: path, mode: 0o660, group: "no-such-group-\(getpid())"), [])
    }
}
