import Foundation
import NIOCore
import NIOEmbedded
@testable import StepEngine
@testable import StepFleet
@testable import StepLogging
import StepProtocol
@testable import StepServer
@testable import StepService
@testable import StepStore
import XCTest

/// ClientHandler on an EmbeddedChannel with the line decoder in front of it, as ProtocolServer builds its
/// pipeline, answering through InMemoryDaemon. Nothing runs until the test says so: the event loop's queued
/// work (the replies that come "later") runs at `runLoop()`, and writability is set by hand.
final class ClientHandlerTests: XCTestCase {
    private let limits = ClientLimits(maximumLineLength: 4096, maximumRequestsInFlight: 16, maximumUnsentBytes: 64 * 1024)
    private var daemon: InMemoryDaemon!
    private var channel: EmbeddedChannel!
    private var handler: ClientHandler!

    /// What a test reads of each line the daemon wrote.
    private struct Line: Decodable, Equatable {
        var `class`: String
        var id: JSONValue?
        var message: String?
        var steps: Int?
    }

    override func setUpWithError() throws {
        daemon = InMemoryDaemon()
        (channel, handler) = try connect()
        XCTAssertEqual(try received().map(\.class), ["VERSION"])
    }

    override func tearDownWithError() throws {
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    func testPipelinedRepliesComeInRequestOrderWhenAnEarlierOneIsAnsweredLater() throws {
        daemon.walk(steps: 5)
        try send(#"{"cmd":"steps","id":1}"# + "\n" + #"{"cmd":"reset","id":2}"# + "\n" + #"{"cmd":"steps","id":3}"# + "\n")
        XCTAssertEqual(try received(), [Line(class: "STEPS", id: .integer(1), steps: 5)])
        guard case .open(_, .awaitingReply, .open) = handler.state else { return XCTFail("\(handler.state)") }
        XCTAssertFalse(handler.wantsToRead(writable: true), "nothing more is read while a request waits")

        try runLoop()
        // Had `steps` 3 been answered before the reset's reply, it would still say 5.
        XCTAssertEqual(try received(), [Line(class: "STEPS", id: .integer(2), steps: 0), Line(class: "STEPS", id: .integer(3), steps: 0)])
        guard case .open(_, .idle, .open) = handler.state else { return XCTFail("\(handler.state)") }
        XCTAssertTrue(handler.wantsToRead(writable: true))
    }

    func testEveryReplyAndEveryErrorOfAnObjectCarriesItsRequestsIDExactly() throws {
        let requests = [
            #"{"cmd":"steps","id":9007199254740993}"#,
            #"{"cmd":"history","id":{"k":"v"}}"#,
            #"{"cmd":"watch","enable":"yes","id":"w"}"#,
            #"{"cmd":"fly","id":[1,{"b":true}]}"#,
            #"{"id":3.5}"#,
            "   ",
            #"[1]"#,
            #"{"cmd":"steps"}"#,
        ]
        try send(requests.joined(separator: "\n") + "\n")
        try runLoop()
        let lines = try received()
        XCTAssertEqual(lines.map(\.class), ["STEPS", "HISTORY", "ERROR", "ERROR", "ERROR", "ERROR", "STEPS"], "the blank line gets nothing")
        XCTAssertEqual(lines.map(\.id), [.integer(9007199254740993), .object(["k": .string("v")]), .string("w"),
                                         .array([.integer(1), .object(["b": .bool(true)])]), .number(3.5), nil, nil])
        XCTAssertEqual(lines[2].message, RequestError.badField(name: "enable", expected: "true or false").description)
        XCTAssertEqual(lines[5].message, RequestError.notAnObject.description)
    }

    func testALineOver4KiBGetsOneErrorAndTheConnectionStays() throws {
        let prefix = #"{"cmd":"steps","id":1,"pad":""#
        let exactly4096 = prefix + String(repeating: "x", count: 4096 - prefix.utf8.count - 2) + #""}"#
        XCTAssertEqual(exactly4096.utf8.count, 4096)
        try send(exactly4096 + "\n")
        // A longer line, in pieces with no newline yet: reported once, discarded up to its newline.
        try send(String(repeating: "y", count: 3000))
        try send(String(repeating: "y", count: 3000))
        try send("yyy\n" + #"{"cmd":"steps","id":2}"# + "\n")
        let lines = try received()
        XCTAssertEqual(lines.map(\.class), ["STEPS", "ERROR", "STEPS"])
        XCTAssertEqual(lines.map(\.id), [.integer(1), nil, .integer(2)])
        XCTAssertEqual(lines[1].message, "request line longer than 4096 bytes, discarded")
        XCTAssertTrue(channel.isActive)
    }

    func testNoReplyIsStartedWhileTheClientLeavesItsOutputUnread() throws {
        setWritable(false)
        try send(#"{"cmd":"steps","id":1}"# + "\n" + #"{"cmd":"steps","id":2}"# + "\n")
        XCTAssertEqual(try received(), [], "replies wait until the client reads")
        XCTAssertEqual(daemon.requestsHandled, [], "nor are they computed")
        XCTAssertFalse(handler.wantsToRead(writable: channel.isWritable))

        setWritable(true)
        XCTAssertEqual(try received().map(\.id), [.integer(1), .integer(2)])
        XCTAssertTrue(handler.wantsToRead(writable: channel.isWritable))
        XCTAssertTrue(channel.isActive)
    }

    func testAClientPipeliningBehindUnreadOutputIsClosedOnlyOnceItHasReadNothingForTheStallTimeout() throws {
        setWritable(false)
        let request = #"{"cmd":"steps"}"# + "\n"
        try send(String(repeating: request, count: 17))
        XCTAssertTrue(channel.isActive, "a client that pipelines is given time to read (it used to be closed here)")
        channel.embeddedEventLoop.advanceTime(by: limits.stallTimeout - .milliseconds(1))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        let lines = try received()
        XCTAssertEqual(lines.map(\.class), ["ERROR"])
        XCTAssert(lines[0].message?.hasPrefix("more than 16 requests waiting for an answer while 64 KiB of replies are unread, none read for 3 s") == true,
                  lines[0].message ?? "")
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(daemon.requestsHandled, [], "a closed client's waiting requests are never computed")
        XCTAssertEqual(daemon.clientsClosedOverLimit, 1)
        XCTAssertTrue(daemon.sessions.isEmpty)
    }

    /// 200 requests in one write, the client reading: it reads within the stall timeout, so every request is
    /// answered (issue 25).
    func testAClientPipeliningWhileItReadsGetsEveryReply() throws {
        setWritable(false)
        try send((0..<200).map { #"{"cmd":"steps","id":\#($0)}"# }.joined(separator: "\n") + "\n")
        channel.embeddedEventLoop.advanceTime(by: limits.stallTimeout - .milliseconds(1))
        setWritable(true)  // the client read
        channel.embeddedEventLoop.advanceTime(by: limits.stallTimeout * 2)
        XCTAssertEqual(try received().map(\.id), (0..<200).map { .integer(Int64($0)) })
        XCTAssertTrue(channel.isActive)
        XCTAssertEqual(daemon.clientsClosedOverLimit, 0)
    }

    /// A long reply goes out a piece at a time while the client reads, and the requests after it wait for it.
    func testALongReplyIsWrittenInPiecesOnlyWhileTheClientReads() throws {
        try send(#"{"cmd":"track","id":1}"# + "\n" + #"{"cmd":"steps","id":2}"# + "\n")
        setWritable(false)  // the client has earlier output to read when the document comes
        try runLoop()
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "nothing is written while the output is unread")
        guard case .open(_, .streaming, _) = handler.state else { return XCTFail("\(handler.state)") }

        setWritable(true)
        var written = Data()
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written += Data(buffer.readableBytesView) }
        let expected = LongLine(id: .integer(1), pieces: 8).line
        XCTAssertGreaterThan(written.count, 0)
        XCTAssertLessThan(written.count, expected.utf8.count, "a few pieces per turn of the event loop, the rest in later turns")
        try runLoop()
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written += Data(buffer.readableBytesView) }
        XCTAssertEqual(String(decoding: written.prefix(expected.utf8.count), as: UTF8.self), expected)
        let after = try JSONDecoder().decode(Line.self, from: written.dropFirst(expected.utf8.count))
        XCTAssertEqual(after.id, .integer(2), "the request after the document is answered after it")
        guard case .open(_, .idle, _) = handler.state else { return XCTFail("\(handler.state)") }
    }

    func testAClientThatReadsNoneOfADocumentIsClosedAfterTheStallTimeout() throws {
        try send(#"{"cmd":"track","id":1}"# + "\n")
        setWritable(false)
        try runLoop()
        channel.embeddedEventLoop.advanceTime(by: limits.stallTimeout)
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(daemon.clientsClosedOverLimit, 1)
    }

    /// Every ERROR carries the request's id when the line has one: over the length limit wherever the id
    /// stands in it, or not valid JSON (issue 25: a client matching on ids would wait forever).
    func testAnErrorForALineTooLongOrNotJSONCarriesTheLinesID() throws {
        let padding = String(repeating: "a", count: 5000)
        try send(#"{"cmd":"history","from":"\#(padding)","id":17}"# + "\n")
        try send(#"{"id":"first","cmd":"history","from":"\#(padding)"}"# + "\n")
        // In pieces, the id at the end of the last one, and an id that is an object.
        try send(#"{"cmd":"history","from":""# + padding)
        try send(padding + #"","note":"\"id\":5","id":{"n":[1,"}"]}}"# + "\n")
        try send(#"{"cmd":"steps","id":9,"#  + "\n")
        try send(#"{"cmd":"steps","x":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]],"id":-3.5}"# + "\n")
        let lines = try received()
        XCTAssertEqual(lines.map(\.class), ["ERROR", "ERROR", "ERROR", "ERROR", "ERROR"])
        XCTAssertEqual(lines.map(\.id), [.integer(17), .string("first"), .object(["n": .array([.integer(1), .string("}")])]),
                                         .integer(9), .number(-3.5)])
        XCTAssertTrue(channel.isActive)
    }

    func testAHalfClosedClientGetsEveryReplyItAskedForThenTheClose() throws {
        // The last request comes without its newline, with the end of input (`echo -n ... | socat`).
        try send(#"{"cmd":"history","id":1}"# + "\n" + #"{"cmd":"steps","id":2}"#)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        XCTAssertTrue(channel.isActive, "history's reply is still to come")
        guard case .open(_, .awaitingReply, .shut) = handler.state else { return XCTFail("\(handler.state)") }

        try runLoop()
        XCTAssertEqual(try received().map(\.class), ["HISTORY", "STEPS"])
        XCTAssertFalse(channel.isActive)
        XCTAssertTrue(daemon.sessions.isEmpty)
    }

    func testAReplyForAClientThatLeftIsDropped() throws {
        try send(#"{"cmd":"history","id":1}"# + "\n")
        try channel.close().wait()
        try runLoop()
        XCTAssertEqual(try received(), [])
        guard case .closed = handler.state else { return XCTFail("\(handler.state)") }
        XCTAssertTrue(daemon.sessions.isEmpty)
    }

    func testARefusedClientGetsAnErrorInsteadOfVersionAndIsClosed() throws {
        daemon.maximumClients = 1
        let (refused, _) = try connect()
        let greeting = try XCTUnwrap(try refused.readOutbound(as: ByteBuffer.self))
        let line = try JSONDecoder().decode(Line.self, from: Data(greeting.readableBytesView))
        XCTAssertEqual(line.class, "ERROR")
        XCTAssertEqual(line.message, ConnectionRefusal.full(limit: 1).description)
        XCTAssertFalse(refused.isActive)
        XCTAssertEqual(daemon.sessions.count, 1, "the first client keeps its place")
        _ = try refused.finish(acceptAlreadyClosed: true)
    }

    // MARK: Helpers

    private func connect() throws -> (EmbeddedChannel, ClientHandler) {
        let channel = EmbeddedChannel()
        let handler = ClientHandler(responder: daemon, limits: limits,
                                    budget: ReplyBudget(limitBytes: 16 << 20, loop: channel.eventLoop))
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(LineFrameDecoder(maximumLength: limits.maximumLineLength)))
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/run/stepd/stepd.sock")).wait()
        return (channel, handler)
    }

    /// Bytes from the client, as one read.
    private func send(_ text: String) throws {
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        try channel.writeInbound(buffer)
    }

    /// Runs what waits on the event loop: the replies answered "on another queue".
    private func runLoop() throws {
        channel.embeddedEventLoop.run()
    }

    /// As the socket does when the client's unread output crosses the high or the low water mark.
    private func setWritable(_ writable: Bool) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    /// The lines written since the last call; each write must be one whole line.
    private func received() throws -> [Line] {
        var lines: [Line] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            let data = Data(buffer.readableBytesView)
            XCTAssertEqual(data.last, 0x0A)
            XCTAssertEqual(data.filter { $0 == 0x0A }.count, 1, String(decoding: data, as: UTF8.self))
            lines.append(try JSONDecoder().decode(Line.self, from: data))
        }
        return lines
    }
}
