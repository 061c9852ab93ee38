import Foundation
import XCTest

/// docs/architecture.md lists every type that opts out of the compiler's Sendable check; this keeps the list true.
final class UncheckedEscapesTests: XCTestCase {
    func testTheArchitectureDocumentListsEveryUncheckedSendable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let declaration = try NSRegularExpression(pattern: #"(?:class|struct|enum)\s+(\w+)(?:<[^>]*>)?\s*:[^{]*@unchecked Sendable"#)
        var marked = Set<String>()
        for case let file as String in try XCTUnwrap(FileManager.default.enumerator(atPath: sources.path)) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                marked.insert((text as NSString).substring(with: match.range(at: 1)))
            }
        }
        XCTAssertGreaterThan(marked.count, 0, "the sources were read")
        let document = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let start = try XCTUnwrap(document.range(of: "<!-- unchecked escapes -->"))
        let end = try XCTUnwrap(document.range(of: "<!-- end of unchecked escapes -->"))
        let list = String(document[start.upperBound..<end.lowerBound])
        let named = try NSRegularExpression(pattern: #"`(?:\w+\.)?(\w+)`"#)
        let listed = Set(named.matches(in: list, range: NSRange(list.startIndex..., in: list)).map {
            (list as NSString).substring(with: $0.range(at: 1))
        }).intersection(marked.union(Self.knownNames(in: list)))
        XCTAssertEqual(marked.subtracting(listed).sorted(), [], "marked @unchecked Sendable but not in docs/architecture.md")
        XCTAssertEqual(Self.knownNames(in: list).subtracting(marked).sorted(), [], "listed in docs/architecture.md but no longer marked")
    }

    /// The names each bullet of the list starts with (before its first parenthesis).
    private static func knownNames(in list: String) -> Set<String> {
        var names = Set<String>()
        for line in list.split(separator: "\n") where line.hasPrefix("- ") {
            let head = line.split(separator: "(", maxSplits: 1).first.map(String.init) ?? ""
            for part in head.split(separator: "`").enumerated() where part.offset % 2 == 1 {
                names.insert(String(part.element.split(separator: ".").last ?? part.element))
            }
        }
        return names
    }
}
