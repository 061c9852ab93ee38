import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import ServiceLifecycle
import StepLogging
import StepProtocol
import Timekeeping

/// The HTTP side: the page's JSON endpoints and its event stream (every one in docs/web.md).
struct WebAPI: Sendable {
    let link: DaemonLink
    let hub: EventHub
    let settings: PageSettings
    /// The token that `reset` needs; nil: stepd-web is read-only.
    let resetToken: String?
    let logger: Logger
    /// The start of today for the page's first history.
    var clock: any DaemonClock = SystemClock()
    /// Refused resets, logged once per 10 s with a count of the rest (a flood of wrong tokens is one line).
    let refusals: RateLimitedLog

    func register(on router: Router<BasicRequestContext>) {
        router.get("/api/config") { _, _ in json(settings.json) }
        router.get("/api/status") { _, _ in await proxy(["cmd": .string("status")]) }
        router.get("/api/steps") { _, _ in await proxy(["cmd": .string("steps")]) }
        router.get("/api/position") { _, _ in await proxy(["cmd": .string("position")]) }
        router.get("/api/visits") { request, _ in await checked { await proxy(try range(["cmd": .string("visits")], request)) } }
        router.get("/api/track") { request, _ in
            await checked { await proxy(try range(["cmd": .string("track"), "format": .string("geojson")], request)) }
        }
        router.get("/api/history") { request, _ in await checked { try await history(request) } }
        router.post("/api/reset") { request, _ in await reset(request) }
        router.get("/api/events") { _, _ in await events() }
        // Every /api reply is JSON (docs/web.md), a path that names nothing too, with the list of those that do.
        for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
            for path in ["/api", "/api/**"] {
                router.on(RouterPath(path), method: method) { request, _ in
                    failure(.notFound, "no such API: \(request.method) \(request.uri.path); see docs/web.md for /api/config, /api/status, "
                            + "/api/steps, /api/position, /api/track, /api/visits, /api/history, /api/events, POST /api/reset")
                }
            }
        }
    }

    /// A request whose query was checked: a bad value (QueryError) is answered 400 here, never sent on.
    private func checked(_ respond: () async throws -> Response) async -> Response {
        do {
            return try await respond()
        } catch let error as QueryError {
            return failure(.badRequest, error.description)
        } catch {
            return failed(error)
        }
    }

    /// `from` and `to` from the query, checked to be times as the daemon takes them (Query.time: bounded, well
    /// formed); whether the range is one it serves the daemon says.
    private func range(_ fields: [String: JSONValue], _ request: Request) throws -> [String: JSONValue] {
        var fields = fields
        for name in ["from", "to"] {
            if let value = try Query.time(name, request.uri.queryParameters.get(name)) { fields[name] = .string(value) }
        }
        return fields
    }

    /// `bin`, `from`, `to` as the daemon takes them; or `days=N` (day bins): the last N local days of the
    /// daemon's own time zone, today included, which a browser in another zone could not work out.
    private func history(_ request: Request) async throws -> Response {
        var fields = try range(["cmd": .string("history")], request)
        let bin = try Query.bin(request.uri.queryParameters.get("bin"))
        fields["bin"] = .string(bin)
        if let text = request.uri.queryParameters.get("days") {
            guard let days = Int(text), (1...3660).contains(days), bin == "day" else {
                return failure(.badRequest, "\"days\" must be a whole number from 1 to 3660, with bin=day")
            }
            do {
                fields["from"] = .string(try await startOfDay(daysAgo: days - 1))
            } catch {
                return failed(error)
            }
        }
        return await proxy(fields)
    }

    /// Local midnight `days` days ago in the daemon's zone, as ISO-8601 with that zone's offset.
    private func startOfDay(daysAgo days: Int) async throws -> String {
        let reply = try await link.request(["cmd": .string("status")])
        let status = try JSONDecoder().decode(StatusMessage.self, from: reply)
        let zone = status.time_zone.flatMap(TimeZone.init(identifier:))
            ?? TimeZone(secondsFromGMT: status.utc_offset_s ?? 0) ?? .gmt
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let today = calendar.startOfDay(for: clock.now)
        let start = calendar.date(byAdding: .day, value: -days, to: today) ?? today
        return Timestamp.string(start, in: zone)
    }

    private func reset(_ request: Request) async -> Response {
        guard let token = resetToken else {
            return failure(.forbidden, "stepd-web is read-only: reset is allowed only when it is started with --token-file")
        }
        let given = request.headers[.authorization].flatMap { header -> String? in
            header.hasPrefix("Bearer ") ? String(header.dropFirst("Bearer ".count)) : nil
        }
        guard let given, Self.constantTimeEqual(given, token) else {
            let reason = given == nil ? "no token" : "wrong token"
            refusals.log(.notice, cause: reason, "reset refused: \(reason)")
            // RFC 6750: a request without credentials gets the challenge alone; a wrong token invalid_token.
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = given == nil ? "Bearer realm=\"stepd-web\""
                : "Bearer realm=\"stepd-web\", error=\"invalid_token\""
            let message = given == nil
                ? "reset needs the token: enter the line of stepd-web's --token-file (HTTP: Authorization: Bearer TOKEN)"
                : "wrong token: it is not the line in stepd-web's --token-file; check it and try again"
            return failure(.unauthorized, message, headers: headers)
        }
        return await proxy(["cmd": .string("reset")])
    }

    /// Compares without stopping at the first difference, so that the time taken does not reveal the token.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }

    private func events() async -> Response {
        let (id, frames) = await hub.subscribe()
        let hub = self.hub
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // A stream never ends by itself: on SIGTERM, end it so that the server's graceful shutdown can finish.
            try await withGracefulShutdownHandler {
                for await frame in frames { try await writer.write(frame) }
            } onGracefulShutdown: {
                Task { await hub.unsubscribe(id) }
            }
            try await writer.finish(nil)
        })
    }

    /// The daemon's reply as it wrote it, or an error the page can show. A long reply goes out as the client reads
    /// it (DaemonLink.reply); one cut short (the daemon gone, the client stalled) ends the connection without
    /// the chunked body's end, so the client sees it incomplete.
    private func proxy(_ fields: [String: JSONValue]) async -> Response {
        do {
            switch try await link.reply(fields) {
            case .whole(let line):
                return json(line)
            case .streamed(let reader):
                return Response(status: .ok, headers: jsonHeaders([:]), body: ResponseBody { writer in
                    while let piece = try await reader.next() { try await writer.write(piece) }
                    try await writer.finish(nil)
                })
            }
        } catch {
            return failed(error)
        }
    }

    /// The reply for a failure: its status, and Retry-After when stepd-web's connections to the daemon are busy.
    private func failed(_ error: Error) -> Response {
        var headers = HTTPFields()
        if case DaemonError.busy = error { headers[.retryAfter] = "\(WebLimits.retryAfterSeconds)" }
        return failure(Self.status(for: error), "\(error)", headers: headers)
    }

    /// The HTTP status for a failure: a daemon's ERROR by its code (docs/web.md).
    static func status(for error: Error) -> HTTPResponse.Status {
        switch error {
        case DaemonError.refused(let code, _):
            switch code {
            case .notPermitted: return .forbidden
            case .unavailable, .storeFailed, .tooManyClients: return .serviceUnavailable
            case .notReading, .internal: return .badGateway
            // The request as the page made it (a range too long, a bad value), or a code added after this stepd-web.
            case .badRequest, .unknownCommand, .tooLong, .rangeTooLong, nil: return .badRequest
            }
        case DaemonError.timedOut: return .gatewayTimeout
        default: return .serviceUnavailable
        }
    }
}

/// What the page is told at start (`/api/config`).
struct PageSettings: Sendable {
    var tiles: String?
    var attribution: String
    var readOnly: Bool
    var motionRateHz: Double

    var json: ByteBuffer {
        var object: [String: JSONValue] = [
            "attribution": .string(attribution), "read_only": .bool(readOnly), "motion_rate_hz": .number(motionRateHz),
        ]
        object["tiles"] = tiles.map(JSONValue.string) ?? .null
        return ByteBuffer(data: (try? jsonEncoder.encode(JSONValue.object(object))) ?? Data("{}".utf8))
    }
}

func json(_ body: ByteBuffer, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
    Response(status: status, headers: jsonHeaders(headers), body: ResponseBody(byteBuffer: body))
}

func jsonHeaders(_ headers: HTTPFields) -> HTTPFields {
    var headers = headers
    headers[.contentType] = "application/json"
    headers[.cacheControl] = "no-store"
    return headers
}

/// `{"error": "..."}` with the status: 400 a query value stepd-web or the daemon refused, 401 no or a wrong token,
/// 403 not permitted, 502 the daemon's own fault, 503 the daemon (or its history) not reachable, 504 no answer
/// from it in time.
func failure(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
    let body = (try? jsonEncoder.encode(["error": message])) ?? Data()
    return json(ByteBuffer(data: body), status: status, headers: headers)
}
