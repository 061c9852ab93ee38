import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import StepLogging
import StepProtocol

/// stepd-web: the seeds' screens in a browser. A client of stepd's socket that serves one page over HTTP
/// (docs/web.md); a separate program, so that the daemon stays small.
struct StepdWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stepd-web",
        abstract: "Serve stepd's dashboard (pedometer, charts, map, seismometer) over HTTP.",
        discussion: "Read-only unless started with --token-file; then POST /api/reset needs the token. See docs/web.md.",
        version: stepdRelease)

    @Option(help: ArgumentHelp("Address and port to listen on; 0.0.0.0:8947 or [::]:8947 for the local network.",
                               valueName: "host:port"))
    var listen: String = "127.0.0.1:8947"

    @Option(help: ArgumentHelp("One more host name to answer for (besides 127.0.0.1, localhost, [::1], the --listen host and this machine's name); repeatable.",
                               valueName: "name"))
    var allowHost: [String] = []

    @Option(help: ArgumentHelp("The daemon's socket (default: where stepctl looks: $STEPD_SOCKET, /run/stepd/stepd.sock, ...).",
                               valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("A file holding the token that reset needs; without it stepd-web is read-only.",
                               valueName: "path"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("Map tile URL with {z}, {x}, {y} (and {s}), or 'none' for the metric grid only.",
                               valueName: "url"))
    var tiles: String = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"

    @Option(help: ArgumentHelp("The tiles' attribution, shown on the map.", valueName: "text"))
    var tilesAttribution: String = "© OpenStreetMap contributors"

    @Option(help: ArgumentHelp("The page's files (default: ../share/stepd-web beside the binary, else the source tree's).",
                               valueName: "dir"))
    var assets: String?

    @Option(help: ArgumentHelp("Leaflet's files (Debian's libjs-leaflet).", valueName: "dir"))
    var leaflet: String = "/usr/share/javascript/leaflet"

    @Option(help: ArgumentHelp("MOTION frames a second for the seismometer (1 to 60).", valueName: "hz"))
    var motionRate: Double = 20

    @Flag(help: "Log requests and the daemon link at debug level.")
    var verbose = false

    func validate() throws {
        _ = try ListenAddress(listen)
        if let problem = allowHost.lazy.compactMap(AllowedHosts.check(option:)).first { throw ValidationError(problem) }
        guard motionRate >= 1, motionRate <= 60 else { throw ValidationError("--motion-rate must be from 1 to 60") }
        if tiles != "none" {
            guard tiles.contains("{z}"), tiles.contains("{x}"), tiles.contains("{y}") else {
                throw ValidationError("--tiles must contain {z}, {x} and {y}, or be 'none'")
            }
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "stepd-web")
        // Steady state says nothing: the start, a lost daemon and refused resets are notices and warnings.
        logger.logLevel = verbose ? .debug : .notice
        do {
            try await serve(logger: logger)
        } catch let error as StartupError {
            logger.error("\(error)")
            throw ExitCode(error.exitStatus.rawValue)
        }
    }

    private func serve(logger: Logger) async throws {
        let address = try ListenAddress(listen)
        let token = try tokenFile.map(StartupError.readToken)
        let assetsDirectory = try AssetPaths.page(assets)
        try AssetPaths.requireLeaflet(leaflet)

        let link = DaemonLink(fixedPath: socket, connectLog: RateLimitedLog(logger: logger))
        let hub = EventHub(link: link, motionRateHz: motionRate, logger: logger)
        let settings = PageSettings(tiles: tiles == "none" ? nil : tiles, attribution: tilesAttribution,
                                    readOnly: token == nil, motionRateHz: motionRate)
        let router = Router()
        // First: a request for a name stepd-web does not serve gets nothing else, not even the page's files.
        router.add(middleware: HostCheckMiddleware(allowed: AllowedHosts(listenHost: address.host, extra: allowHost),
                                                   refusals: RateLimitedLog(logger: logger)))
        router.add(middleware: FileMiddleware(assetsDirectory, searchForIndexHtml: true, logger: logger))
        router.add(middleware: FileMiddleware(leaflet, urlBasePath: "/leaflet", logger: logger))
        WebAPI(link: link, hub: hub, settings: settings, resetToken: token, logger: logger,
               refusals: RateLimitedLog(logger: logger)).register(on: router)

        let url = "http://\(listen)/"
        let connections = WebLimits.connectionsForFileLimit()
        let open = OpenConnections()
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlineHandler(registry: open)],
            httpDecoderConfiguration: .init(maxHeaderFieldSize: WebLimits.headerBytes, maxHeaderListSize: WebLimits.headerBytes,
                                            maxHeaderFieldCount: WebLimits.headerFields))
        // SIGTERM and SIGINT: the server's graceful shutdown ends the event streams; what still holds on is cut.
        let deadline = ShutdownDeadline(connections: open, logger: logger)
        let app = Application(
            router: router,
            server: .http1(configuration: http),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "stepd-web",
                                 availableConnectionsDelegate: MaximumAvailableConnections(connections, logger: logger)),
            onServerRunning: { _ in
                logger.notice("serving \(url) for stepd at \(link.socketPath)\(token == nil ? " (read-only)" : "")")
            },
            logger: logger)
        do {
            try await app.runService()
        } catch let error as IOError {
            throw StartupError.cannotListen(address: listen, errno: error.errnoCode)
        }
        await hub.finishAll()
        withExtendedLifetime(deadline) {}
    }
}

/// `HOST:PORT`, `[IPv6]:PORT`.
struct ListenAddress {
    var host: String
    var port: Int

    init(_ text: String) throws {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65535).contains(port) else {
            throw ValidationError("--listen must be HOST:PORT (e.g. 127.0.0.1:8947), not \"\(text)\"")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--listen needs a host: 0.0.0.0:\(port) for every address") }
        self.host = host
        self.port = port
    }
}

/// Where the page's files are.
enum AssetPaths {
    /// --assets; else the installed place beside the binary (make install: $(PREFIX)/share/stepd-web); else, for
    /// a build run from its checkout, the source tree's Public folder.
    static func page(_ option: String?) throws -> String {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let installed = executable.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("share/stepd-web").path
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Public").path
        let candidates = option.map { [$0] } ?? [installed, source]
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0 + "/index.html") }) else {
            throw StartupError.noPage(searched: candidates)
        }
        return found
    }

    static func requireLeaflet(_ directory: String) throws {
        guard FileManager.default.fileExists(atPath: directory + "/leaflet.js") else {
            throw StartupError.noLeaflet(directory: directory)
        }
    }
}

/// What stops stepd-web from starting, in one sentence, with its exit status (sysexits.h, ExitStatus).
enum StartupError: Error, CustomStringConvertible {
    case unreadableToken(path: String, reason: String)
    case emptyToken(path: String)
    case noPage(searched: [String])
    case noLeaflet(directory: String)
    case cannotListen(address: String, errno: CInt)

    var description: String {
        switch self {
        case .unreadableToken(let path, let reason): return "cannot read the token file \(path): \(reason)"
        case .emptyToken(let path): return "the token file \(path) is empty; put a long random line in it"
        case .noPage(let searched):
            return "no index.html in \(searched.joined(separator: " or ")); pass --assets DIR (make install puts it in share/stepd-web)"
        case .noLeaflet(let directory):
            return "no leaflet.js in \(directory); install Debian's libjs-leaflet or pass --leaflet DIR"
        case .cannotListen(let address, let code):
            return "cannot listen on \(address): \(String(cString: strerror(code)))"
        }
    }

    var exitStatus: ExitStatus {
        switch self {
        case .unreadableToken, .noPage, .noLeaflet: return .noInput
        case .emptyToken: return .dataError
        case .cannotListen(_, let code) where code == EADDRINUSE: return .tempFail
        case .cannotListen(_, let code) where code == EACCES: return .noPermission
        case .cannotListen: return .cantCreate
        }
    }

    /// The first line of the file, without surrounding white space.
    static func readToken(_ path: String) throws -> String {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file"
            throw StartupError.unreadableToken(path: path, reason: reason)
        }
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard !token.isEmpty else { throw StartupError.emptyToken(path: path) }
        return token
    }
}
