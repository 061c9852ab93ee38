import Foundation
import XCTest

/// stepd-web answers only for the host names it serves (docs/web.md, "Host names"): a page whose name an
/// attacker rebinds to 127.0.0.1 (DNS rebinding) sends its own name in `Host:` and gets 421, not the wearer's
/// track and visits; the local names, the machine's, an --allow-host name and any address are served.
final class WebHostTests: XCTestCase {
    /// One request on a connection of its own, the `Host:` field as given (nil: none, as HTTP/1.0 may send);
    /// the status and the body.
    private func get(port: Int, _ path: String, host: String?, extraHost: String? = nil,
                     version: String = "HTTP/1.1") throws -> (status: Int, body: String) {
        let (fd, connected) = connectToLoopback(port: port)
        defer { close(fd) }
        XCTAssertTrue(connected, "connect to 127.0.0.1:\(port)")
        var head = "GET \(path) \(version)\r\n"
        if let host { head += "Host: \(host)\r\n" }
        if let extraHost { head += "Host: \(extraHost)\r\n" }
        head += "Connection: close\r\n\r\n"
        let bytes = Array(head.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let until = Date().addingTimeInterval(15)
        while Date() < until {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            reply.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: reply, as: UTF8.self)
        let statusLine = text.prefix { $0 != "\r" }
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    /// A rebound page's name (with and without the port, and names that only begin like a local one) gets 421
    /// for the track, the visits, the position and the page's files alike, with the option to use; the local
    /// names, the machine's own and an address are served, and so is HTTP/1.0 without Host.
    func testAnotherHostNameIsRefusedWhileLocalNamesAreServed() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps"], directory: directory)
        defer { daemon.terminate() }
        let web = try WebServer(socket: daemon.socketPath, directory: directory, extra: ["--tiles", "none"])
        defer { web.stop() }
        let port = web.port

        for path in ["/api/track", "/api/visits", "/api/position", "/", "/app.js", "/leaflet/leaflet.js"] {
            for host in ["attacker.example", "attacker.example:\(port)", "127.0.0.1.attacker.example", "localhost.attacker.example:\(port)"] {
                let reply = try get(port: port, path, host: host)
                XCTAssertEqual(reply.status, 421, "\(path) for \(host): \(reply.body.prefix(300))")
                XCTAssertTrue(reply.body.contains("--allow-host"), "\(path) for \(host): \(reply.body.prefix(300))")
                XCTAssertFalse(reply.body.contains("\"class\""), "the daemon's reply passed on: \(reply.body.prefix(300))")
            }
        }
        // A second Host field cannot carry another name past the first.
        XCTAssertEqual(try get(port: port, "/api/track", host: "127.0.0.1:\(port)", extraHost: "attacker.example").status, 400)

        var machine = [CChar](repeating: 0, count: 256)
        XCTAssertEqual(gethostname(&machine, machine.count), 0)
        let machineName = String(cString: machine)
        for host in ["127.0.0.1:\(port)", "127.0.0.1", "localhost:\(port)", "LOCALHOST", "localhost.", "[::1]:\(port)",
                     "192.0.2.7:\(port)", machineName, "\(machineName):\(port)", "\(machineName).local:\(port)"] {
            let reply = try get(port: port, "/api/track", host: host)
            XCTAssertEqual(reply.status, 200, "/api/track for \(host): \(reply.body.prefix(300))")
            XCTAssertTrue(reply.body.contains("\"class\":\"TRACK\""), "/api/track for \(host): \(reply.body.prefix(300))")
        }
        // HTTP/1.0 without Host: no browser sends that, so no rebound page can.
        let bare = try get(port: port, "/api/visits", host: nil, version: "HTTP/1.0")
        XCTAssertEqual(bare.status, 200, bare.body)
        // The page itself, by the name a browser on the board uses.
        let page = try get(port: port, "/", host: "localhost:\(port)")
        XCTAssertEqual(page.status, 200, page.body.prefix(300).description)
        XCTAssertTrue(page.body.contains("<script"), page.body.prefix(300).description)
        XCTAssertTrue(web.log.contains("refused a request for host"), web.log)
    }

    /// A name given with --allow-host (in any case, with a trailing dot) is served, with and without the port.
    func testAnAllowHostNameIsServed() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--device", "stepd-test-absent", "--no-gps"], directory: directory)
        defer { daemon.terminate() }
        let web = try WebServer(socket: daemon.socketPath, directory: directory,
                                extra: ["--tiles", "none", "--allow-host", "Board.Example.test", "--allow-host", "dash.example.test"])
        defer { web.stop() }
        for host in ["board.example.test:\(web.port)", "board.example.test", "BOARD.example.test.", "dash.example.test"] {
            let reply = try get(port: web.port, "/api/track", host: host)
            XCTAssertEqual(reply.status, 200, "/api/track for \(host): \(reply.body.prefix(300))")
        }
        XCTAssertEqual(try get(port: web.port, "/api/track", host: "other.example.test").status, 421)
    }

    /// --allow-host takes a name, not an address with a port or a URL: a mistake is a bad option (64).
    func testAnAllowHostWithAPortIsABadOption() throws {
        let run = try runCommand(Binaries.stepdWeb, ["--allow-host", "board.example.test:8947"], timeout: 30)
        XCTAssertEqual(run.status, 64, run.stderr)
        XCTAssertTrue(run.stderr.contains("without a port"), run.stderr)
    }
}
