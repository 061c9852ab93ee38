import Foundation
import Logging
import NIOCore
import StepProtocol
import Timekeeping

/// The daemon's `watch`, shared by every open page as Server-Sent Events.
///
/// One connection to the daemon however many pages are open, and none when no page is: the first subscriber
/// starts it, the last one leaving stops it. Each daemon line becomes one SSE `data:` frame unchanged (the page
/// reads its `class`); whether the daemon is reachable goes out as `event: link` frames. A page that reads too
/// slowly loses the oldest frames (a bounded buffer), never the hub's memory or the other pages' events.
actor EventHub {
    private let link: DaemonLink
    private let motionRateHz: Double
    private let logger: Logger
    private var subscribers: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
    private var nextID = 0
    private var upstream: Task<Void, Never>?
    /// The last `link` frame, so that a page that opens gets the state at once; nil until the first
    /// connection attempt says whether the daemon is there.
    private var linkFrame: ByteBuffer?
    private var wasConnected: Bool?

    /// What a page draws: every class but the daemon's own STATUS, which the page polls.
    static let watchedClasses: [WatchClass] = [.step, .pedometer, .activity, .position, .visit, .motion]
    /// At 20 MOTION frames a second an open page sees a dead connection within a frame; while none flow (no
    /// daemon, no sensor) this comment line does it, and keeps proxies from closing an idle stream.
    static let keepAliveSeconds: UInt64 = 15
    /// 512 frames: 25 s of MOTION at 20 Hz, far more than a page that reads at all falls behind.
    static let framesBuffered = 512

    /// The keep-alive's timer and the pause before a reconnect.
    private let clock: any DaemonClock

    init(link: DaemonLink, motionRateHz: Double, logger: Logger, clock: any DaemonClock = SystemClock()) {
        self.link = link
        self.clock = clock
        self.motionRateHz = motionRateHz
        self.logger = logger
    }

    var subscriberCount: Int { subscribers.count }

    func subscribe() -> (id: Int, frames: AsyncStream<ByteBuffer>) {
        let (frames, continuation) = AsyncStream.makeStream(of: ByteBuffer.self,
                                                            bufferingPolicy: .bufferingNewest(Self.framesBuffered))
        let id = nextID
        nextID += 1
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        if let linkFrame { continuation.yield(linkFrame) }
        if upstream == nil {
            upstream = Task { [weak self] in await self?.runUpstream() }
        }
        logger.debug("page subscribed", metadata: ["pages": "\(subscribers.count)"])
        return (id, frames)
    }

    func unsubscribe(_ id: Int) {
        guard let continuation = subscribers.removeValue(forKey: id) else { return }
        continuation.finish()
        logger.debug("page left", metadata: ["pages": "\(subscribers.count)"])
        if subscribers.isEmpty {
            upstream?.cancel()
            upstream = nil
        }
    }

    /// Ends every stream (graceful shutdown), so that the responses finish.
    func finishAll() {
        for id in Array(subscribers.keys) { unsubscribe(id) }
    }

    private func broadcast(_ frame: ByteBuffer) {
        for continuation in subscribers.values { continuation.yield(frame) }
    }

    private func noteLink(connected: Bool, error: String?) {
        let frame = Self.linkFrame(connected: connected, error: error)
        linkFrame = frame
        broadcast(frame)
        // Transitions only: a daemon that stays away is logged once, not at every retry.
        if wasConnected != connected {
            if connected {
                logger.debug("watching stepd", metadata: ["socket": "\(link.socketPath)"])
            } else {
                logger.warning("stepd is not reachable; retrying every second: \(error ?? "closed")")
            }
            wasConnected = connected
        }
    }

    /// Watches the daemon until cancelled, reconnecting a second after a failure.
    private func runUpstream() async {
        let keepAlive = clock.makeTimer(queue: .global()) { [weak self] in
            Task { await self?.broadcast(ByteBuffer(string: ": keep-alive\n\n")) }
        }
        let every = Double(Self.keepAliveSeconds)
        keepAlive.schedule(after: every, repeating: every, leewaySeconds: 1)
        defer { keepAlive.cancel() }
        while !Task.isCancelled {
            do {
                try await watchOnce()
                noteLink(connected: false, error: "stepd closed the connection")
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                noteLink(connected: false, error: "\(error)")
            }
            try? await clock.sleep(seconds: 1)
        }
    }

    /// Nonisolated: the connection's lines are read off the actor, and each frame hops onto it to be broadcast.
    private nonisolated func watchOnce() async throws {
        let request = try DaemonLink.line([
            "cmd": .string("watch"), "enable": .bool(true),
            "classes": .array(Self.watchedClasses.map { .string($0.rawValue) }),
            "rate_hz": .number(motionRateHz),
        ])
        // The greeting and the WATCH reply within WebLimits.daemonReplySeconds; the events then come when they do.
        try await link.withConnection(timeoutSeconds: WebLimits.daemonReplySeconds) { lines, outbound, path, settled in
            try await outbound.write(request)
            guard let reply = try await lines.next() else { throw DaemonError.closed(path: path, message: nil) }
            if let error = try? JSONDecoder().decode(ErrorMessage.self, from: reply), error.class == "ERROR" {
                throw DaemonError.refused(code: error.errorCode, message: error.message)
            }
            settled()
            await noteLink(connected: true, error: nil)
            while let line = try await lines.next() {
                await broadcast(Self.dataFrame(line))
            }
        }
    }

    static func dataFrame(_ line: ByteBuffer) -> ByteBuffer {
        var frame = ByteBuffer(string: "data: ")
        var line = line
        frame.writeBuffer(&line)
        frame.writeString("\n\n")
        return frame
    }

    static func linkFrame(connected: Bool, error: String?) -> ByteBuffer {
        var object: [String: JSONValue] = ["connected": .bool(connected)]
        if let error { object["error"] = .string(error) }
        let json = (try? jsonEncoder.encode(JSONValue.object(object))) ?? Data("{\"connected\":false}".utf8)
        return ByteBuffer(string: "event: link\ndata: \(String(decoding: json, as: UTF8.self))\n\n")
    }
}
