import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import StepAcquisition
import StepProcessing

/// The processing engine. It owns the pipeline and the count on one serial dispatch queue: sources hand
/// samples over from their own threads, and everything that changes state runs on `queue`. Readers (the
/// socket server) see only the snapshot the queue publishes after each batch.
public final class Engine: SampleSink, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var detector: StepDetectorKind = .default
        public var rateHz: Double = 60
        /// Stride length for distance when nothing better is known (m): 0.414 × height, a common rule of thumb.
        public var strideMeters: Double = 0.414 * 1.70
        public var location = LocationConfiguration()
        public init() {}
    }

    public let configuration: Configuration
    let queue = DispatchQueue(label: "stepd.pipeline", qos: .userInitiated)
    let logger: Logger

    // Owned by `queue`.
    private let pipeline: StepPipeline
    private var steps = 0
    private var since = Date()
    private var cadence = CadenceMeter()
    private var lastSampleTime = 0.0
    private var rateWindowStart: Double?
    private var rateWindowCount = 0
    private var rateInHz = 0.0
    private var source: (kind: String, description: String, state: SourceState) = ("none", "", .starting)
    // Position (Location/Engine+Location.swift): owned by `queue`, published apart from the step snapshot.
    var locationTracker: LocationTracker
    let publishedLocation = NIOLockedValueBox(LocationSnapshot())

    private let published: NIOLockedValueBox<EngineSnapshot>
    let eventHandlers = NIOLockedValueBox<[@Sendable (EngineEvent) -> Void]>([])

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "stepd.engine")) {
        self.configuration = configuration
        self.logger = logger
        pipeline = StepPipeline(detector: configuration.detector.make(sampleRateHz: configuration.rateHz),
                                rateHz: configuration.rateHz)
        var snapshot = EngineSnapshot()
        snapshot.detector = pipeline.detector.name
        snapshot.rateOutHz = configuration.rateHz
        published = NIOLockedValueBox(snapshot)
        locationTracker = LocationTracker(configuration: configuration.location)
        publishedLocation.withLockedValue { $0 = locationTracker.snapshot }
    }

    /// The latest published state; cheap, safe from any thread.
    public var snapshot: EngineSnapshot { published.withLockedValue { $0 } }

    /// Registers a listener for steps and other events; called on the processing queue, so it must not block.
    public func onEvent(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        eventHandlers.withLockedValue { $0.append(handler) }
    }

    public func attach(source: SampleSource) {
        queue.async { [self] in
            self.source = (source.kind, source.description, .starting)
            publish()
        }
    }

    // MARK: SampleSink

    public func receive(_ samples: [Sample]) {
        let arrival = Date()
        queue.async { [self] in process(samples, arrivedAt: arrival) }
    }

    public func sourceStateChanged(_ state: SourceState) {
        queue.async { [self] in
            guard source.state != state else { return }
            if let reason = state.reason {
                logger.warning("source \(source.description): \(state.name): \(reason)")
            } else {
                logger.info("source \(source.description): \(state.name)")
            }
            source.state = state
            publish()
        }
    }

    // MARK: Requests

    /// Starts counting from zero now (the seed's reset button); replies with the fresh snapshot.
    public func reset(completion: @escaping @Sendable (EngineSnapshot) -> Void) {
        queue.async { [self] in
            steps = 0
            since = Date()
            cadence.reset()
            publish()
            completion(snapshot)
        }
    }

    /// Waits until every batch handed over so far has been processed (used by shutdown and tests).
    public func drain() { queue.sync {} }

    // MARK: Processing (on `queue`)

    private func process(_ samples: [Sample], arrivedAt arrival: Date) {
        guard let last = samples.last else { return }
        var newSteps: [Double] = []
        pipeline.process(samples) { newSteps.append($0) }
        lastSampleTime = last.time
        measureRate(count: samples.count, until: last.time)
        if !newSteps.isEmpty {
            let handlers = eventHandlers.withLockedValue { $0 }
            for t in newSteps {
                steps += 1
                cadence.record(stepAt: t)
                // The batch's last sample arrived now; a step's wall time is that far before it on the sample clock.
                let wall = arrival.addingTimeInterval(t - last.time)
                for handler in handlers { handler(.step(count: steps, time: wall)) }
            }
        }
        publish()
    }

    private func measureRate(count: Int, until time: Double) {
        guard let start = rateWindowStart, time >= start else {
            rateWindowStart = time
            rateWindowCount = 0
            return
        }
        rateWindowCount += count
        if time - start >= 2 {
            rateInHz = Double(rateWindowCount) / (time - start)
            rateWindowStart = time
            rateWindowCount = 0
        }
    }

    private func publish() {
        var s = EngineSnapshot()
        s.steps = steps
        s.since = since
        s.cadenceStepsPerMinute = cadence.stepsPerMinute(now: lastSampleTime)
        s.distanceMeters = Double(steps) * configuration.strideMeters
        s.detector = pipeline.detector.name
        s.sourceKind = source.kind
        s.sourceDescription = source.description
        s.sourceState = source.state
        s.rateInHz = rateInHz
        s.rateOutHz = configuration.rateHz
        s.samplesIn = pipeline.samplesIn
        s.samplesOut = pipeline.samplesOut
        published.withLockedValue { $0 = s }
    }
}
