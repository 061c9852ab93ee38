import StepProtocol

/// `{"cmd":"watch","enable":true,"classes":[...],"rate_hz":N}`: which events this client receives from now on
/// (ProtocolServer+Events.swift sends them). The reply says what is watched now.
extension ProtocolServer {
    func watch(_ request: Request, from session: ClientSession) throws -> WatchMessage {
        let enable = try request.bool("enable") ?? true
        var classes: Set<WatchClass> = []
        if let names = try request.strings("classes") {
            for name in names {
                guard let c = WatchClass(rawValue: name.uppercased()) else {
                    let known = WatchClass.allCases.map(\.rawValue).joined(separator: ", ")
                    throw RequestError.badField(name: "classes", expected: "a list of classes among \(known)")
                }
                classes.insert(c)
            }
        } else {
            classes = WatchClass.defaultClasses
        }
        if let rate = try request.number("rate_hz") {
            guard rate > 0 else { throw RequestError.badField(name: "rate_hz", expected: "a positive number of Hz, at most 60") }
            session.motionRateHz = min(rate, engine.configuration.rateHz)
        }
        if enable {
            session.watched.formUnion(classes)
        } else if request.fields["classes"] == nil {
            session.watched = []
        } else {
            session.watched.subtract(classes)
        }
        updateMotionDemand()
        let current = session.watched.map(\.rawValue).sorted()
        return WatchMessage(enable: !current.isEmpty, classes: current,
                            rate_hz: session.watched.contains(.motion) ? session.motionRateHz : nil, id: request.id)
    }
}
