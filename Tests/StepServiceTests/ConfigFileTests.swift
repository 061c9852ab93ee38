import Foundation
import StepEngine
import StepFleet
import StepLogging
import StepProcessing
import StepProtocol
import StepServer
import StepService
import StepStore
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

    /// `#` after a space ends the value, as in most ini files; inside a word or in quotes it is the value's.
    func testCommentsAfterAValueAreDropped() throws {
        let file = try ConfigFile.parse("""
            gpsd = gpsbox.local:2947 # my gps
            retention_days = 30\t# a month
            admin_group = "st #aff"   # quoted
            mqtt_username = ab#cd
            state_dir = "/data/stepd" # quoted, then a comment
            height = 1.82 #
            """, path: path)
        XCTAssertEqual(file.string("gpsd"), "gpsbox.local:2947")
        XCTAssertEqual(file.integer("retention_days"), 30)
        XCTAssertEqual(file.string("admin_group"), "st #aff")
        XCTAssertEqual(file.string("mqtt_username"), "ab#cd")
        XCTAssertEqual(file.string("state_dir"), "/data/stepd")
        XCTAssertEqual(file.number("height"), 1.82)
        // A bad value with a comment is refused for the value alone, not for the comment.
        XCTAssertThrowsError(try ConfigFile.parse("gpsd = gpsbox.local:99999 # my gps", path: path)) { error in
            guard case .badValue(_, _, _, let value, _)? = error as? ConfigError else { return XCTFail("\(error)") }
            XCTAssertEqual(value, "gpsbox.local:99999")
        }
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
                                 ("log_level = loud", "one of trace, debug, info, notice, warning, error, critical"),
                                 // A name, label or iio:deviceN: a path would match no device and be waited for ever.
                                 ("barometer = /sys/bus/iio/devices/iio:device1", "an IIO device's name, label or iio:deviceN (not a path)"),
                                 ("device = /dev/iio:device0", "an IIO device's name, label or iio:deviceN (not a path)")] {
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
            XCTAssertEqual((error as? ConfigError)?.exitStatus, .noInput)
        }
    }

    func testADirectoryIsReportedInWordsNotAsAFoundationError() throws {
        let directory = NSTemporaryDirectory() + "stepd-conf-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(try ConfigFile.load(path: directory, required: true)) { error in
            XCTAssertEqual(error as? ConfigError, .cannotRead(file: directory, reason: "is a directory"))
            XCTAssertEqual("\(error)", "\(directory): cannot read the configuration: is a directory")
            XCTAssertEqual((error as? ConfigError)?.exitStatus, .noInput)
        }
        XCTAssertEqual(ConfigError.unknownKey(file: "f", line: 1, key: "k", known: []).exitStatus, .config)
    }

    /// docs/gps.md promises these in stepd.conf.
    func testGPSKeysAreSettableInTheFile() throws {
        let file = try ConfigFile.parse("gpsd = 10.0.0.5:2947\nvisit_radius_m = 150\nno_gps = true\n"
                                        + "gps_retry_s = 0.5\ntrack_max_eph_m = 30\nvisit_min_stay_s = 120\n", path: path)
        XCTAssertEqual(file.string("gpsd"), "10.0.0.5:2947")
        XCTAssertEqual(file.number("visit_radius_m"), 150)
        XCTAssertEqual(file.flag("no_gps"), true)
        XCTAssertEqual(file.number("visit_min_stay_s"), 120)
        XCTAssertNotNil(try? ConfigFile.parse("gpsd = [::1]:2947", path: path))
        XCTAssertThrowsError(try ConfigFile.parse("gpsd = 10.0.0.5:99999", path: path)) { error in
            guard case ConfigError.badValue(_, 1, "gpsd", _, "HOST:PORT (the port must be a whole number from 1 to 65535)") = error
            else { return XCTFail("\(error)") }
        }
    }

    func testEveryFixedDefaultIsAValueOfItsOwnKindAndRange() {
        for option in ConfigOption.all + ConfigOption.commandLineOnly where !option.defaultText.hasPrefix("(") {
            XCTAssertNotNil(option.defaultValue, "\(option.key): default \(option.defaultText) is not \(option.kind.expectation)")
        }
        let keys = (ConfigOption.all + ConfigOption.commandLineOnly).map(\.key)
        XCTAssertEqual(Set(keys).count, keys.count, "a key is declared twice")
        XCTAssertFalse(ConfigOption.all.contains { $0.key == "config" }, "--config cannot be set from the file it names")
    }

    func testCommandLineAndFileShareOneRange() {
        let speed = ConfigOption.named("speed")
        XCTAssertEqual(try speed.value("1000"), .number(1000))
        XCTAssertThrowsError(try speed.value("1001")) { error in
            XCTAssertEqual("\(error)", "expected a number from 0.01 to 1000, found \"1001\"")
        }
        XCTAssertThrowsError(try ConfigFile.parse("speed = 1001", path: path))
    }

    /// docs/configuration.md's table, docs/stepd.conf.example and stepd(8)'s OPTIONS are generated from
    /// ConfigOption.all; a committed copy that differs means someone edited one by hand or forgot to run
    /// `stepd options --update-docs .`.
    func testGeneratedDocumentationEqualsTheDeclarations() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        for part in OptionDocs.parts {
            let text = try String(contentsOf: root.appendingPathComponent(part.file), encoding: .utf8)
            let expected = try XCTUnwrap(OptionDocs.splice(part, into: text), "\(part.file) lacks its generated-part fences")
            XCTAssertEqual(text, expected, "\(part.file) differs from ConfigOption.all: run `stepd options --update-docs .`")
        }
        let reference = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        for option in ConfigOption.all {
            XCTAssertTrue(reference.contains("| `\(option.key)` | `--\(option.flagName)"), "configuration.md lacks \(option.key)")
        }
    }

    /// The example, uncommented, is itself a valid file with every key; and every `key = value` a page of
    /// docs/ shows inline (gps.md's `gpsd = gpsbox.local:2947`) is one stepd.conf accepts.
    func testExamplesInTheDocsAreValidFiles() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs")
        let example = try String(contentsOf: docs.appendingPathComponent("stepd.conf.example"), encoding: .utf8)
        let setting = try NSRegularExpression(pattern: "^#[a-z_]+ = ")
        let uncommented = example.split(separator: "\n").map { line -> String in
            let text = String(line)
            let isSetting = setting.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            return isSetting ? String(text.dropFirst()) : text
        }
        let parsed = try ConfigFile.parse(uncommented.joined(separator: "\n"), path: "example")
        XCTAssertEqual(Set(parsed.entries.keys), Set(ConfigOption.all.map(\.key)))

        let inline = try NSRegularExpression(pattern: "`([a-z_]+ = [^`]+)`")
        let keys = Set(ConfigOption.all.map(\.key))
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: docs.path) where name.hasSuffix(".md") {
            let text = try String(contentsOf: docs.appendingPathComponent(name), encoding: .utf8)
            for match in inline.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let snippet = String(text[Range(match.range(at: 1), in: text)!])
                guard keys.contains(String(snippet.prefix { $0 != " " })) else { continue }
                XCTAssertNoThrow(try ConfigFile.parse(snippet, path: name), "\(name): `\(snippet)`")
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 3, "gps.md's gpsd, visit_radius_m and no_gps examples at least")
    }

    /// A stepd.conf saved with CRLF line ends (Windows, some editors) reads as the same file with LF: values
    /// without the \r, lines numbered alike. A stray control character elsewhere is shown escaped.
    func testCRLFLineEndsAreReadAndControlCharactersShownEscaped() throws {
        let file = try ConfigFile.parse("# stepd\r\nsocket = /run/x.sock\r\nloop = yes\r\n\r\nheight = 1.8\r\nadmin_group = \"staff\"\r\n", path: path)
        XCTAssertEqual(file.string("socket"), "/run/x.sock")
        XCTAssertEqual(file.flag("loop"), true)
        XCTAssertEqual(file.number("height"), 1.8)
        XCTAssertEqual(file.entries["height"]?.line, 5)
        XCTAssertEqual(file.string("admin_group"), "staff")
        XCTAssertThrowsError(try ConfigFile.parse("loop = yes\r\ndetector = thr\reshold\u{1B}[2J\r\n", path: path)) { error in
            XCTAssertEqual("\(error)", #"/etc/stepd/stepd.conf:2: key "detector": expected one of threshold, peak, found "thr\reshold\u{1B}[2J""#)
        }
    }

    /// gpsd's address is checked whole: each malformed one is refused with the reason, every good one read.
    func testMalformedGPSDAddressesAreRefusedWithTheReason() throws {
        for good in ["localhost", "localhost:2947", "[::1]:2947", "[::1]", "10.0.0.5:2947", "[fe80::1%eth0]:2947",
                     "gps.local:80", "host_1:65535"] {
            XCTAssertNoThrow(try ConfigFile.parse("gpsd = \(good)", path: path), good)
        }
        XCTAssertEqual(try GPSDAddress(parsing: "gps:0080").description, "gps:80")
        XCTAssertEqual(try GPSDAddress(parsing: "[::1]").description, "[::1]:2947")
        let bad: [(String, String)] = [
            ("[::1", "no ] closes the IPv6 address"), ("[::1]x", "after ] comes :PORT or nothing"),
            ("[::1]:", "the port after the colon is missing"), ("host:", "the port after the colon is missing"),
            (":2947", "the host before the colon is missing"), ("host:99999", "the port must be a whole number from 1 to 65535"),
            ("host:+80", "the port must be a whole number"), ("host:80:extra", "more than one colon"),
            ("::1", "more than one colon"), ("::1:2947", "more than one colon"), ("\"\"", "it is empty"),
            ("host name:2947", "a host is a name or an address"), ("[]:2947", "inside brackets goes an IPv6 address"),
            ("[gps.local]:2947", "inside brackets goes an IPv6 address"), ("host]:2947", "brackets go around an IPv6 address"),
            ("[fe80::1%]:2947", "the zone after %"), (String(repeating: "a", count: 254) + ":2947", "at most 253 bytes"),
        ]
        for (text, reason) in bad {
            XCTAssertThrowsError(try ConfigFile.parse("# gps\ngpsd = \(text)", path: path), text) { error in
                guard case ConfigError.badValue(_, 2, "gpsd", _, let expected) = error else { return XCTFail("\(text): \(error)") }
                XCTAssertTrue(expected.hasPrefix("HOST:PORT (") && expected.contains(reason), "\(text): \(expected)")
            }
        }
    }

    /// A value longer than PATH_MAX (or a socket path longer than sun_path holds) is refused by its length, and
    /// the message shows its start and its size, not the megabyte.
    func testOverlongValuesAreRefusedWithTheirLength() throws {
        let long = String(repeating: "x", count: 100_000)
        for key in ["device", "barometer", "replay", "state_dir", "mqtt_topic_prefix", "mqtt_url", "admin_group", "iio_uri", "gpsd"] {
            XCTAssertThrowsError(try ConfigFile.parse("\(key) = \(long)", path: path), key) { error in
                guard case ConfigError.badValue(_, 1, key, _, let expected) = error else { return XCTFail("\(key): \(error)") }
                XCTAssertTrue(expected.hasPrefix("at most 4095 bytes ("), "\(key): \(expected)")
                XCTAssertLessThan("\(error)".count, 400, "\(key): the message is a line")
                XCTAssertTrue("\(error)".contains(#"xxx…" (100000 bytes)"#), "\(error)")
            }
        }
        XCTAssertNoThrow(try ConfigFile.parse("state_dir = /" + String(repeating: "d", count: 4094), path: path))
        XCTAssertNoThrow(try ConfigFile.parse("socket = /" + String(repeating: "s", count: 106), path: path))
        XCTAssertThrowsError(try ConfigFile.parse("socket = /" + String(repeating: "s", count: 107), path: path)) { error in
            guard case ConfigError.badValue(_, 1, "socket", _, let expected) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(expected.hasPrefix("at most 107 bytes ("), expected)
        }
        XCTAssertThrowsError(try ConfigOption.named("device").value(long)) { error in
            XCTAssertTrue("\(error)".hasPrefix("expected at most 4095 bytes (an IIO device's name"), "\(error)")
        }
    }
}
