/// Reads the broker's byte stream as MQTT fixed headers go by and says when a packet declares more than
/// `limitBytes`, before any of it is handed to libmosquitto: libmosquitto (2.0) allocates a packet's declared
/// length on its client side and fills it whatever the size, so a hostile or intercepted broker's PUBLISH of
/// 268 MB became 551 MB of the daemon's memory. Pure: fed the bytes in order, any way they are cut.
struct MQTTPacketSizeGuard {
    /// The most one packet from the broker may declare (its remaining length). A publisher that subscribes to
    /// nothing is owed CONNACK, PUBACK and PINGRESP (a few bytes); the bound leaves room for a broker's reasons
    /// and properties.
    static let defaultLimitBytes = 64 * 1024

    enum Verdict: Equatable {
        case pass
        /// A packet (its type, 1 PUBLISH... 14 DISCONNECT) declares `declaredBytes`, over the limit.
        case tooLarge(packetType: Int, declaredBytes: Int)
        /// A remaining length of more than four bytes: not MQTT.
        case malformed
    }

    let limitBytes: Int
    /// Payload bytes of the current packet still to pass.
    private var payloadLeft = 0
    /// The fixed header read so far: the type byte, then the remaining length's bytes.
    private var header: [UInt8] = []

    init(limitBytes: Int = Self.defaultLimitBytes) {
        self.limitBytes = limitBytes
    }

    /// Feeds the next bytes of the stream.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        var index = 0
        while index < bytes.count {
            if payloadLeft > 0 {
                let taken = min(payloadLeft, bytes.count - index)
                payloadLeft -= taken
                index += taken
                continue
            }
            let byte = bytes[index]
            index += 1
            header.append(byte)
            if header.count == 1 { continue }
            if byte & 0x80 != 0 {
                if header.count == 5 { return .malformed }
                continue
            }
            var declared = 0
            for (position, lengthByte) in header.dropFirst().enumerated() {
                declared |= Int(lengthByte & 0x7F) << (7 * position)
            }
            let type = Int(header[0] >> 4)
            header.removeAll(keepingCapacity: true)
            if declared > limitBytes { return .tooLarge(packetType: type, declaredBytes: declared) }
            payloadLeft = declared
        }
        return .pass
    }
}
