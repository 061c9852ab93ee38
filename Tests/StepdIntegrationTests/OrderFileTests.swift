import Foundation
import XCTest

/// Sources/stepd/stepd.order against the release stepd it lays out (`make build`, docs/iio.md "Memory").
/// The linker skips the names it does not find without a word, so a file left behind by a refactoring or a new
/// toolchain would quietly cost memory: this test is what notices.
final class OrderFileTests: XCTestCase {
    /// The share of the file's names that may have gone (renamed, inlined) before it must be made again.
    static let staleShareAllowed = 0.05

    /// The order file the release link uses: STEPD_ORDER_FILE as Package.swift reads it, else the committed one.
    static var orderFile: URL {
        guard let path = ProcessInfo.processInfo.environment["STEPD_ORDER_FILE"], !path.isEmpty else {
            return Binaries.repository.appendingPathComponent("Sources/stepd/stepd.order")
        }
        return path.hasPrefix("/") ? URL(fileURLWithPath: path) : Binaries.repository.appendingPathComponent(path)
    }

    func testTheOrderFilesNamesAreDefinedInTheReleaseDaemon() throws {
        // Debug builds are compiled and linked otherwise (no -static-stdlib, other specializations): only the
        // release binary has the names; scripts/test runs this in its release pass.
        guard Binaries.productsDirectory.resolvingSymlinksInPath().lastPathComponent == "release" else {
            throw XCTSkip("needs the release stepd (STEPD_BIN_DIR=$(swift build -c release --show-bin-path))")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/nm") else { throw XCTSkip("nm is not installed (binutils)") }
        let nm = try runCommand("/usr/bin/nm", ["--defined-only", "--format=just-symbols", Binaries.stepd])
        XCTAssertEqual(nm.status, 0, nm.stderr)
        let defined = Set(nm.stdout.split(separator: "\n"))
        XCTAssertGreaterThan(defined.count, 10_000, "\(Binaries.stepd) has no symbol table (stripped?)")

        let listed = try String(contentsOf: Self.orderFile, encoding: .utf8).split(separator: "\n").filter { !$0.isEmpty }
        XCTAssertGreaterThan(listed.count, 1000, "\(Self.orderFile.path) lists almost nothing")
        let missing = listed.filter { !defined.contains($0) }
        let share = Double(missing.count) / Double(max(listed.count, 1))
        print("OrderFileTests: \(missing.count) of \(listed.count) names in \(Self.orderFile.lastPathComponent) "
              + "not defined in \(Binaries.stepd) (\(String(format: "%.1f", share * 100)) %)")
        XCTAssertLessThanOrEqual(share, Self.staleShareAllowed,
            "\(missing.count) of \(listed.count) names in \(Self.orderFile.path) are no longer defined in the release "
            + "stepd, e.g. \(missing.prefix(5).joined(separator: ", ")): run tools/order-file (docs/iio.md, \"Memory\")")
    }
}
