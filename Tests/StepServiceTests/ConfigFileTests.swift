import Foundation
import StepService
import XCTest

final class ConfigFileTests: XCTestCase {
    private let path = "/etc/stepd/stepd.conf"

    func testReadsTypedValuesCommentsAndQuotes() throws {
        let file = try ConfigFile.parse("""
            # stepd
              state_dir = /data/stepd   
            retention_days=30

            height = 1.82
            loop = yes
            admin_group = "  staff "
            detector = threshold
            """, path: path)
        XCTAssertEqual(file.string("state_dir"), "/data/stepd")
        XCTAssertEqual(file.integer("retention_days"), 30)
        XCTAssertEqual(file.number("height"), 1.82)
        XCTAssertEqual(file.flag("loop"), true)
        XCTAssertEqual(file.string("admin_group"), "  staff ")
        XCTAssertEqual(file.string("detector"), "threshold")
        XCTAssertEqual(file.entries["height"]?.line, 5)
        XCTAssertNil(file.string("socket"))
    }

    func testUnknownKeyNamesFileLineAndKey() {
        XCTAssertThrowsError(try ConfigFile.parse("speed = 2\n\nretention = 3\n", path: path)) { error in
            guard case ConfigError.unknownKey(let file, let line, let key, let known) = error else { return XCTFail("\(error)") }
            XCTAssertEqual([file, String(line), key], [path, "3", "retention"])
            XCTAssertTrue(known.contains("retention_days"))
            XCTAssertTrue("\(error)".hasPrefix("/etc/stepd/stepd.conf:3: unknown key \"retention\""), "\(error)")
        }
    }

    func testBadValueSaysWhatWasExpected() {
        XCTAssertThrowsError(try ConfigFile.parse("# c\nheight = 175\n", path: path)) { error in
            XCTAssertEqual(error as? ConfigError, .badValue(file: path, line: 2, key: "height", value: "175",
                                                           expected: "a number from 0.5 to 2.5"))
            XCTAssertEqual("\(error)", "/etc/stepd/stepd.conf:2: key \"height\": expected a number from 0.5 to 2.5, found \"175\"")
        }
        for (line, expected) in [("retention_days = 0", "a whole number from 1 to 36500"),
                                 ("retention_days = 1.5", "a whole number from 1 to 36500"),
                                 ("loop = maybe", "true or false"),
                                 ("detector = magic", "one of threshold, peak"),
                                 ("speed = nan", "a number from 0.01 to 1000"),
                                 ("log_level = loud", "one of trace, debug, info, notice, warning, error, critical")] {
            XCTAssertThrowsError(try ConfigFile.parse(line, path: path), line) { error in
                guard case ConfigError.badValue(_, 1, _, _, let got) = error else { return XCTFail("\(line): \(error)") }
                XCTAssertEqual(got, expected, line)
            }
        }
    }

    func testLineWithoutEqualsAndDuplicateKeysAreErrors() {
        XCTAssertThrowsError(try ConfigFile.parse("loop\n", path: path)) { error in
            XCTAssertEqual(error as? ConfigError, .notKeyValue(file: path, line: 1, text: "loop"))
        }
        XCTAssertThrowsError(try ConfigFile.parse(" = 3\n", path: path)) { error in
            XCTAssertEqual(error as? ConfigError, .notKeyValue(file: path, line: 1, text: "= 3"))
        }
        XCTAssertThrowsError(try ConfigFile.parse("speed = 1\nspeed = 2\n", path: path)) { error in
            XCTAssertEqual(error as? ConfigError, .duplicateKey(file: path, line: 2, key: "speed", firstLine: 1))
        }
    }

    func testMissingDefaultFileIsEmptyButMissingGivenFileIsAnError() throws {
        let missing = "/nonexistent/stepd-\(UUID().uuidString).conf"
        XCTAssertTrue(try ConfigFile.load(path: missing, required: false).entries.isEmpty)
        XCTAssertThrowsError(try ConfigFile.load(path: missing, required: true)) { error in
            XCTAssertEqual(error as? ConfigError, .cannotRead(file: missing, reason: "no such file"))
        }
    }

    /// docs/configuration.md and docs/stepd.conf.example must describe every key the parser accepts.
    func testDocumentationListsEveryKeyWithItsDefault() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs")
        let reference = try String(contentsOf: docs.appendingPathComponent("configuration.md"), encoding: .utf8)
        let example = try String(contentsOf: docs.appendingPathComponent("stepd.conf.example"), encoding: .utf8)
        for option in ConfigOption.all {
            XCTAssertTrue(reference.contains("| `\(option.key)` | "), "configuration.md lacks \(option.key)")
            let shownDefault = option.defaultText.hasPrefix("(") ? option.defaultText : "`\(option.defaultText)`"
            XCTAssertTrue(reference.contains("| `\(option.key)` | \(shownDefault) |"),
                          "configuration.md gives \(option.key) another default than \(option.defaultText)")
            XCTAssertTrue(example.contains("#\(option.key) = "), "stepd.conf.example lacks \(option.key)")
        }
        // The example, uncommented, is itself a valid file.
        let setting = try NSRegularExpression(pattern: "^#[a-z_]+ = ")
        let uncommented = example.split(separator: "\n").map { line -> String in
            let text = String(line)
            let isSetting = setting.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            return isSetting ? String(text.dropFirst()) : text
        }
        XCTAssertNoThrow(try ConfigFile.parse(uncommented.joined(separator: "\n"), path: "example"))
    }
}
