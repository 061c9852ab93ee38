import Foundation
import NIOCore
import NIOEmbedded
@testable import StepServer
import StepProtocol
import StepProcessing
import TestSupport
import XCTest

/// Five thousand random and mutated request lines (HostileRequestLines) through the server's line decoder
/// and ClientHandler, in process on an EmbeddedChannel: every line gets exactly the answer the protocol promises
/// (one line of JSON for a request, one ERROR for a line over 4 KiB, nothing for a blank keep-alive) and the
/// connection stays open. The live daemon takes the same lines in FuzzTests.
final class RequestFuzzTests: XCTestCase {
    private let limits = ClientLimits(maximumLineLength: 4096, maximumRequestsInFlight: 16, maximumUnsentBytes: 64 * 1024)

    func testFiveThousandHostileLinesEachGetTheirAnswerAndTheConnectionStays() throws {
        let daemon = InMemoryDaemon()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maximumLength: limits.maximumLineLength)))
        try channel.pipeline.syncOperations.addHandler(ClientHandler(responder: daemon, limits: limits,
            budget: ReplyBudget(limitBytes: 16 << 20, loop: channel.eventLoop)))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/run/stepd/stepd.sock")).wait()
        _ = try readLines(channel)  // VERSION

        var g = SplitMix(seed: 7)
        var classes: [String: Int] = [:]
        for index in 0..<5_000 {
            let line = HostileRequestLines.next(&g)
            var buffer = channel.allocator.buffer(capacity: line.utf8.count + 1)
            buffer.writeString(line + "\n")
            try channel.writeInbound(buffer)
            channel.embeddedEventLoop.run()
            let answers = try readLines(channel)
            XCTAssertEqual(answers.count, Self.expectedAnswers(line), "line \(index): \(line.prefix(200))")
            for answer in answers { classes[answer, default: 0] += 1 }
            guard channel.isActive else { return XCTFail("the connection closed at line \(index): \(line.prefix(200))") }
        }
        XCTAssertGreaterThan(classes["ERROR", default: 0], 2_500, "\(classes)")
        XCTAssertGreaterThan(classes["STEPS", default: 0], 50, "well-formed requests among them are answered: \(classes)")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    /// What the protocol answers to one line (docs/protocol.md): an ERROR for a line over the limit, nothing for a
    /// blank line, else one line.
    private static func expectedAnswers(_ line: String) -> Int {
        var bytes = Array(line.utf8)
        if bytes.count > 4096 { return 1 }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return bytes.allSatisfy { $0 == 32 || $0 == 9 } ? 0 : 1
    }

    /// The class of each whole JSON line written since the last call.
    private func readLines(_ channel: EmbeddedChannel) throws -> [String] {
        var text: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += buffer.readableBytesView }
        guard !text.isEmpty else { return [] }
        XCTAssertEqual(text.last, 0x0A, "answers are whole lines")
        return try text.split(separator: 0x0A).map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
            return try XCTUnwrap(object?["class"] as? String, String(decoding: line, as: UTF8.self))
        }
    }
}
