import Foundation
import XCTest

/// stepctl and stepd-web decide on an ERROR's `code`, never on its words (docs/protocol.md "Errors"): a peer
/// that refuses in other words, as a daemon whose messages were reworded or translated would, still gets the
/// exit status and the HTTP status its codes mean. ~2 s.
final class ErrorCodeClientTests: XCTestCase {
    /// ERROR lines without an id: each answers the one request in flight (stepctl and stepd-web send one at a time).
    private static let refusals = [
        "reset": #"{"class":"ERROR","code":"not_permitted","message":"remise à zéro refusée"}"#,
        "history": #"{"class":"ERROR","code":"store_failed","message":"historique indisponible"}"#,
        "visits": #"{"class":"ERROR","code":"range_too_long","message":"plage trop longue"}"#,
        "track": #"{"class":"ERROR","code":"internal","message":"erreur interne"}"#,
        "position": #"{"class":"ERROR","code":"a_code_from_the_future","message":"inconnu"}"#,
    ]

    func testStepctlsExitStatusFollowsTheCode() throws {
        let directory = try TemporaryDirectory()
        let peer = try ProtocolPeer(path: directory.file("peer.sock"), refusals: Self.refusals)
        defer { peer.stop() }
        let reset = try runCommand(Binaries.stepctl, ["reset", "--socket", peer.path])
        XCTAssertEqual(reset.status, 77, "not_permitted is EX_NOPERM whatever the words: \(reset.stderr)")
        XCTAssertTrue(reset.stderr.contains("remise à zéro refusée"), "the daemon's words are shown: \(reset.stderr)")
        let position = try runCommand(Binaries.stepctl, ["position", "--socket", peer.path])
        XCTAssertEqual(position.status, 1, "a code this stepctl does not know is a failed request: \(position.stderr)")
        XCTAssertTrue(position.stderr.contains("inconnu"), position.stderr)
    }

    func testStepdWebsHTTPStatusFollowsTheCode() async throws {
        let directory = try TemporaryDirectory()
        let peer = try ProtocolPeer(path: directory.file("peer.sock"), refusals: Self.refusals)
        defer { peer.stop() }
        let token = directory.file("token")
        try "secret\n".write(toFile: token, atomically: true, encoding: .utf8)
        let web = try WebServer(socket: peer.path, directory: directory, extra: ["--tiles", "none", "--token-file", token])
        defer { web.stop() }
        let expected: [(method: String, path: String, status: Int, words: String)] = [
            ("POST", "/api/reset", 403, "remise à zéro refusée"),
            ("GET", "/api/history", 503, "historique indisponible"),
            ("GET", "/api/visits?from=2026-11-01T00:00:00Z", 400, "plage trop longue"),
            ("GET", "/api/track?from=2026-11-01T00:00:00Z", 502, "erreur interne"),
            ("GET", "/api/position", 400, "inconnu"),
        ]
        for (method, path, status, words) in expected {
            let reply = method == "POST" ? try await web.post(path, token: "secret") : try await web.get(path)
            XCTAssertEqual(reply.status, status, "\(method) \(path): \(reply.body)")
            XCTAssertTrue(reply.body.contains(words), "\(method) \(path): \(reply.body)")
        }
    }
}
