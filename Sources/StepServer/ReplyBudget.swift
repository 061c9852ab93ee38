import NIOCore

/// The reply bytes the daemon holds for all its clients at once: written to a connection and not yet taken by
/// its socket, or made and waiting to be written. Each connection is already bounded by its own budget (the
/// channel's high water mark, `maximumUnsentBytes`); this one bounds their sum, so that many clients that
/// read nothing cannot add up to the board's memory. While it is spent, long replies (track documents, and
/// history, track and visits reads from the store) wait, and go on as clients read or are closed; short
/// replies (status, steps) never wait, so root's `status` is answered during a flood.
/// Owned by the server's event loop.
final class ReplyBudget: Sendable {
    let limitBytes: Int
    private struct State {
        var heldBytes = 0
        var waiting = CircularBuffer<() -> Void>()
        var peakBytes = 0
    }
    private let state: NIOLoopBoundBox<State>
    private let loop: EventLoop

    init(limitBytes: Int, loop: EventLoop) {
        self.limitBytes = limitBytes
        self.loop = loop
        state = .makeBoxSendingValue(State(), eventLoop: loop)
    }

    /// The bytes held now, and the most held at once since start (STATUS).
    var heldBytes: Int { state.value.heldBytes }
    var peakBytes: Int { state.value.peakBytes }
    var hasRoom: Bool { state.value.heldBytes < limitBytes }

    func charge(_ bytes: Int) {
        state.value.heldBytes += bytes
        state.value.peakBytes = max(state.value.peakBytes, state.value.heldBytes)
    }

    /// Gives bytes back and starts what waited for them, oldest first, while there is room.
    func release(_ bytes: Int) {
        state.value.heldBytes -= bytes
        assert(state.value.heldBytes >= 0, "released more reply bytes than were charged")
        while hasRoom, let next = state.value.waiting.popFirst() { next() }
    }

    /// Runs `body` now if there is room, else once there is.
    func whenRoom(_ body: @escaping () -> Void) {
        loop.assertInEventLoop()
        if hasRoom && state.value.waiting.isEmpty { body() } else { state.value.waiting.append(body) }
    }

    /// Writes `buffer`, counting it until the socket has taken it (or the channel failed).
    func write(_ buffer: ByteBuffer, context: ChannelHandlerContext, flush: Bool) {
        let bytes = buffer.readableBytes
        charge(bytes)
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { [self] _ in release(bytes) }
        if flush { context.writeAndFlush(NIOAny(buffer), promise: promise) } else { context.write(NIOAny(buffer), promise: promise) }
    }
}
