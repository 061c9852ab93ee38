import Foundation
import XCTest

/// Where the built executables and the repository's files are, as seen from a test.
enum Binaries {
    /// The build products folder: the test bundle sits in it, beside `stepd` and `stepctl`.
    static var productsDirectory: URL {
        if let override = ProcessInfo.processInfo.environment["STEPD_BIN_DIR"] {
            return URL(fileURLWithPath: override)
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static var stepd: String { productsDirectory.appendingPathComponent("stepd").path }
    static var stepctl: String { linkedProgram("stepctl") }
    static var stepdWeb: String { linkedProgram("stepd-web") }

    /// stepctl and stepd-web are links to stepd, which runs the one its name says (Sources/stepd/MultiCall.swift).
    /// SwiftPM builds only stepd; scripts/link-programs makes the links after `make build` and in scripts/test,
    /// and a test run by `swift test` alone makes them here, replacing a program an older build left there.
    private static func linkedProgram(_ name: String) -> String {
        let path = productsDirectory.appendingPathComponent(name).path
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != "stepd",
           FileManager.default.isExecutableFile(atPath: stepd) {
            let temporary = path + ".link-\(getpid())"
            try? FileManager.default.removeItem(atPath: temporary)
            // A rename replaces the old file at once: a test in another process never finds the name missing.
            if symlink("stepd", temporary) == 0, rename(temporary, path) != 0 { unlink(temporary) }
        }
        return path
    }

    /// The repository root, from this file's place in it.
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    static var bundledRecording: String { repository.appendingPathComponent("data/walk-inhand.csv.gz").path }

    /// A recording excerpt bundled for the tests (Tests/data, its README gives sources and licences).
    static func testData(_ name: String) -> String { repository.appendingPathComponent("Tests/data").appendingPathComponent(name).path }

    /// ../shared/data beside the repository; tests that need it skip when it is absent.
    static func sharedData(_ relative: String) throws -> URL {
        let url = repository.deletingLastPathComponent().appendingPathComponent("shared/data").appendingPathComponent(relative)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("shared data not present at \(url.path)")
        }
        return url
    }
}

/// A scratch folder removed when the test ends.
final class TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init() throws {
        // Short, because a Unix socket path must fit in 108 bytes.
        let base = URL(fileURLWithPath: "/tmp").appendingPathComponent("stepd-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        url = base
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func file(_ name: String) -> String { url.appendingPathComponent(name).path }
}
