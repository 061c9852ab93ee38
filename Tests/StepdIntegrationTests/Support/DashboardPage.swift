import Foundation
import XCTest

/// stepd-web in front of a daemon's socket and the page open in a headless Chromium tab: what the web tests
/// read through the DOM.
final class DashboardPage {
    let web: WebServer
    let browser: Chromium
    let session: String

    init(socket: String, directory: TemporaryDirectory, webArguments: [String] = ["--tiles", "none"]) throws {
        web = try WebServer(socket: socket, directory: directory, extra: webArguments)
        browser = try Chromium(directory: directory)
        session = try browser.open(web.url)
    }

    func stop() {
        browser.stop()
        web.stop()
    }

    /// The value of a JavaScript expression in the page.
    func evaluate(_ expression: String) throws -> Any? { try browser.evaluate(expression, session: session) }

    func waitUntil(_ expression: String, timeout: TimeInterval = 30, _ what: String,
                   file: StaticString = #filePath, line: UInt = #line) throws {
        try browser.waitUntil(expression, session: session, timeout: timeout, what, file: file, line: line)
    }

    /// The status line's text.
    var status: String { (try? evaluate("document.getElementById('status').textContent") as? String) ?? "" }

    /// The alert(), confirm(), prompt() and window.open() calls the page made (Chromium.dialogRecorder).
    var dialogs: [String] { (try? evaluate("window.stepdTestDialogs") as? [String]) ?? ["(not recorded)"] }
}
