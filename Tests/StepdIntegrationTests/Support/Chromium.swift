import Foundation
import XCTest

/// A real headless Chromium (Debian's `chromium`) driven through the DevTools protocol.
///
/// The protocol runs over `--remote-debugging-pipe`: JSON messages ending in NUL, commands written to the
/// browser's fd 3 and replies read from its fd 4 (what Puppeteer's pipe transport does). No port to pick and
/// no WebSocket client, and nothing else on the machine can reach the browser.
final class Chromium {
    static let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]

    private var pid: pid_t = 0
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private var pending = Data()
    private var nextID = 0
    let logPath: String
    private let profile: String

    static func requireBrowser() throws -> String {
        guard let path = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("no Chromium (Debian package chromium; scripts/setup installs it)")
        }
        return path
    }

    init(directory: TemporaryDirectory) throws {
        let executable = try Self.requireBrowser()
        profile = directory.file("chromium-profile")
        logPath = directory.file("chromium.log")
        var commands: [Int32] = [0, 0], replies: [Int32] = [0, 0]
        guard pipe(&commands) == 0, pipe(&replies) == 0 else { throw ChromiumError.spawn("pipe: \(errno)") }
        let log = Glibc.open(logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, log, 1)
        posix_spawn_file_actions_adddup2(&actions, log, 2)
        posix_spawn_file_actions_adddup2(&actions, commands[0], 3)
        posix_spawn_file_actions_adddup2(&actions, replies[1], 4)
        let arguments = [executable, "--headless", "--remote-debugging-pipe", "--user-data-dir=\(profile)",
                         // Tests run as root, where Chromium's sandbox refuses to start.
                         "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", "--mute-audio", "--window-size=1280,1000", "about:blank"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let status = posix_spawn(&pid, executable, &actions, nil, &argv, environ)
        close(log)
        close(commands[0])
        close(replies[1])
        toBrowser = commands[1]
        fromBrowser = replies[0]
        guard status == 0 else { throw ChromiumError.spawn("posix_spawn: \(status)") }
    }

    deinit { stop() }

    func stop() {
        guard pid > 0 else { return }
        _ = try? send("Browser.close", timeout: 5)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(5)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline { kill(pid, SIGKILL); waitpid(pid, &status, 0); break }
            usleep(20_000)  // poll interval of a wait for a state, not a fixed wait
        }
        pid = 0
        close(toBrowser)
        close(fromBrowser)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends a command and returns its `result`, skipping the events that come meanwhile.
    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], session: String? = nil,
              timeout: TimeInterval = 20) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var data = try JSONSerialization.data(withJSONObject: message)
        data.append(0)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(toBrowser, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { throw ChromiumError.closed(method) }
                offset += n
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reply = try readMessage(until: deadline, method: method)
            guard reply["id"] as? Int == id else { continue }
            if let error = reply["error"] as? [String: Any] {
                throw ChromiumError.protocolError(method, "\(error["message"] ?? error)")
            }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    private func readMessage(until deadline: Date, method: String) throws -> [String: Any] {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let message = pending[pending.startIndex..<end]
                pending = Data(pending[(end + 1)...])
                return (try JSONSerialization.jsonObject(with: message) as? [String: Any]) ?? [:]
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw ChromiumError.timeout(method) }
            var poller = pollfd(fd: fromBrowser, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let n = read(fromBrowser, &chunk, chunk.count)
            if n <= 0 { throw ChromiumError.closed(method) }
            pending.append(contentsOf: chunk[0..<n])
        }
    }

    /// What every page opened by `open` runs first: alert(), confirm(), prompt() and window.open() are noted
    /// in `window.stepdTestDialogs` instead of opening anything (a dialog in a headless tab would block every
    /// later `evaluate`), so that a test can check that the page never opened one.
    static let dialogRecorder = """
        window.stepdTestDialogs = [];
        for (const name of ["alert", "confirm", "prompt", "open"]) {
          window[name] = (...args) => { window.stepdTestDialogs.push(`${name}: ${args.join(" ")}`); return null; };
        }
        """

    /// Opens `url` in a new tab of `width`×`height` and returns the tab's session for `evaluate`.
    func open(_ url: String, width: Int = 1280, height: Int = 1000) throws -> String {
        let target = try send("Target.createTarget", ["url": "about:blank"])
        let targetID = try XCTUnwrap(target["targetId"] as? String)
        let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        let session = try XCTUnwrap(attached["sessionId"] as? String)
        try send("Emulation.setDeviceMetricsOverride",
                 ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600], session: session)
        try send("Page.enable", session: session)  // without it the script below is not run
        try send("Page.addScriptToEvaluateOnNewDocument", ["source": Self.dialogRecorder], session: session)
        try send("Page.navigate", ["url": url], session: session)
        return session
    }

    /// A left click (`count` 2: a double click) at the page's CSS pixel (`x`, `y`), as a mouse makes it:
    /// pointer and mouse events, then click or dblclick.
    func click(x: Double, y: Double, count: Int = 1, session: String) throws {
        try send("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": x, "y": y], session: session)
        for clickCount in 1...count {
            for type in ["mousePressed", "mouseReleased"] {
                try send("Input.dispatchMouseEvent",
                         ["type": type, "x": x, "y": y, "button": "left", "buttons": type == "mousePressed" ? 1 : 0,
                          "clickCount": clickCount], session: session)
            }
        }
    }

    /// A key pressed and released in the focused element, e.g. ("ArrowLeft", 37): `key` as KeyboardEvent.key,
    /// `keyCode` as KeyboardEvent.keyCode (Windows virtual-key codes, which is what pages such as Leaflet read).
    func press(key: String, keyCode: Int, session: String) throws {
        for type in ["rawKeyDown", "keyUp"] {
            try send("Input.dispatchKeyEvent", ["type": type, "key": key, "code": key, "windowsVirtualKeyCode": keyCode,
                                                "nativeVirtualKeyCode": keyCode], session: session)
        }
    }

    /// The value of a JavaScript expression in the page (JSON-compatible values only).
    func evaluate(_ expression: String, session: String) throws -> Any? {
        let result = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true],
                              session: session)
        if let exception = result["exceptionDetails"] as? [String: Any] {
            throw ChromiumError.protocolError("Runtime.evaluate", "\(exception["text"] ?? "exception") in \(expression)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` until it is true; a timeout throws one failure (WaitTimedOut) with what it last was.
    func waitUntil(_ expression: String, session: String, timeout: TimeInterval = 30, _ what: String,
                   file: StaticString = #filePath, line: UInt = #line) throws {
        var last: Any?
        try pollUntil(what, timeout: timeout, every: 0.1, detail: "\(expression) was \(last ?? "nil")", file: file, line: line) {
            // While the page loads, the expression may throw (no such element yet): not yet true.
            do { last = try evaluate(expression, session: session) } catch { last = error }
            return last as? Bool == true
        }
    }
}

enum ChromiumError: Error, CustomStringConvertible {
    case spawn(String)
    case closed(String)
    case timeout(String)
    case protocolError(String, String)

    var description: String {
        switch self {
        case .spawn(let why): return "cannot start Chromium: \(why)"
        case .closed(let method): return "Chromium closed the DevTools pipe during \(method)"
        case .timeout(let what): return "Chromium: timed out on \(what)"
        case .protocolError(let method, let message): return "Chromium: \(method) failed: \(message)"
        }
    }
}
