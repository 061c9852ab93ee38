// swift-tools-version:6.0
// The targets read as the pipeline: C shims → acquisition → processing → service → clients. What depends on what:
//   StepAcquisition → StepProcessing, StepProtocol, CIIO, CGPS, CZlib (sources: replay, IIO, gpsd; StartupFile)
//   StepEngine      → StepProcessing, StepProtocol, Timekeeping (the processing queue; time comes from a DaemonClock)
//   StepStore       → StepProcessing, StepProtocol, GRDB        (the history database and the MQTT outbox's rows)
//   StepFleet       → StepEngine, StepStore, CMosquitto, CLibSSL (MQTT)
//   StepServer      → StepEngine, StepStore, StepFleet, swift-nio (the socket)
//   StepService     → all four                                  (configuration, start and stop, systemd; no libiio, no libgps)
//   StepResearch    → StepAcquisition, StepProcessing            (`stepd analyze`, `stepd bench`)
//   stepd           → StepAcquisition, StepService, StepResearch (wires the chosen source to the engine)
//   StepctlCommands, StepdWebCommands → StepProtocol          (clients of the socket: Sources/stepctl, Sources/stepd-web)
// One program, stepd, holds the three (a multi-call executable, as busybox): `stepctl` and `stepd-web` are links
// to it, and it runs the one its name says (Sources/stepd/MultiCall.swift). So Swift's runtime and Foundation,
// with ICU's data, are on a board once, not three times (docs/service.md, "The Debian package").
import Foundation
import PackageDescription

// The release daemon is linked for memory (docs/iio.md, "Memory"): the Swift runtime and Foundation linked in
// (only what stepd calls is loaded, and the binary runs without a toolchain), PIE with packed relocations, no
// exported symbol table, and the functions a running daemon executes laid out together (Sources/stepd/stepd.order,
// made by tools/order-file), so that the pages it touches are few: 7.7 MB less RSS. STEPD_ORDER_FILE names
// another file, or with an empty value none (to measure what it saves); the linker skips names it no longer
// finds, and OrderFileTests fails when more than 5 % of them are gone.
let packageRoot = String(#filePath.dropLast("/Package.swift".count))
let orderFileSetting = ProcessInfo.processInfo.environment["STEPD_ORDER_FILE"] ?? "Sources/stepd/stepd.order"
let orderFile: String? = orderFileSetting.isEmpty ? nil : orderFileSetting
let daemonReleaseLinkFlags = [
    "-static-stdlib",
    // What a static build of the modules would name for the linker: Foundation's own static dependencies.
    "-lFoundationInternationalization", "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections",
    "-lCoreFoundation", "-lswiftSynchronization",
    "-Xclang-linker", "-fuse-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--no-export-dynamic",
]
// STEPD_LINK_MAP=/path/stepd.map writes the linker's map of the daemon: scripts/bench-memory reads it to charge
// stepd's resident pages to the libraries linked into it.
let linkMap = ProcessInfo.processInfo.environment["STEPD_LINK_MAP"].flatMap { $0.isEmpty ? nil : $0 }
let daemonLinkFlags = daemonReleaseLinkFlags + (orderFile.map { path in
    // lld warns once for each listed name it does not find: the file has gone stale (tools/order-file).
    ["-Xlinker", "--symbol-ordering-file=\(path.hasPrefix("/") ? path : "\(packageRoot)/\(path)")"]
} ?? []) + (linkMap.map { ["-Xlinker", "-Map=\($0)"] } ?? [])

// The tests' own code (and TestSupport's) unoptimized in a release build: scripts/test builds once, in the
// release configuration with -enable-testing, so that the modules the tests exercise are the optimized ones that
// ship; optimizing 20,000 lines of test code on top (whole-module, one job a module) would cost minutes and ship
// nothing. Last on the compiler's line, these win over SwiftPM's -O and -whole-module-optimization.
let testCodeSettings: [SwiftSetting] = [
    .unsafeFlags(["-Onone", "-no-whole-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "stepd",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "stepd", targets: ["stepd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Only stepd-web (the web dashboard) uses it; linked into the one program, it is never run by the daemon.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // Thin C shims: translate libiio / libgps / zlib / libmosquitto into plain functions and structs, no logic.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "CIIO", path: "Sources/CIIO", linkerSettings: [.linkedLibrary("iio")]),
        .target(name: "CGPS", path: "Sources/CGPS", linkerSettings: [.linkedLibrary("gps")]),
        // libmosquitto is loaded with dlopen when MQTT is configured, not linked (docs/iio.md, "Memory"): only its header.
        .target(name: "CMosquitto", path: "Sources/CMosquitto"),
        // libcrypto's HMAC-SHA256 for the MQTT device id, also loaded with dlopen on first use: no header needed.
        .target(name: "CLibCrypto", path: "Sources/CLibCrypto"),
        // libssl for the TLS side of the MQTT relay (Sources/StepFleet/MQTTRelay.swift), loaded with dlopen too.
        .target(name: "CLibSSL", path: "Sources/CLibSSL"),

        // Pure logic, no I/O: samples, resampling, filters, step detectors, geodesy, position tracking, and the
        // sink protocols through which sources hand their data to the engine.
        .target(name: "StepProcessing", path: "Sources/StepProcessing"),
        // State that threads share, behind a pthread lock that ThreadSanitizer sees (docs/architecture.md).
        .target(name: "Locking", path: "Sources/Locking"),
        // The kernel's timerfd header, for the quiet deadlines of the production clock.
        .target(name: "CTimerFD", path: "Sources/CTimerFD"),
        // Time as an input: the clock and timers every part of the daemon takes (docs/architecture.md, "Time").
        .target(name: "Timekeeping", dependencies: ["Locking", "CTimerFD"], path: "Sources/Timekeeping"),
        // Where samples and fixes come from: replay files, IIO accelerometers, gpsd.
        .target(name: "StepAcquisition", dependencies: [
            "StepProcessing", "StepProtocol", "Locking", "Timekeeping", "CIIO", "CGPS", "CZlib",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepAcquisition"),
        // The wire protocol's messages, shared by the daemon and its clients, and how the daemon's values are
        // written as them (Wire/).
        .target(name: "StepProtocol", dependencies: ["StepProcessing"], path: "Sources/StepProtocol"),
        // Logs that an outsider can trigger, at most once per cause per interval (the server, stepd-web).
        .target(name: "StepLogging", dependencies: [
            "Timekeeping", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepLogging"),
        // The daemon's engine: the processing queue that counts steps, floors and position, and its events.
        .target(name: "StepEngine", dependencies: [
            "StepProcessing", "StepProtocol", "Locking", "Timekeeping",
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepEngine"),
        // The history store: SQLite through GRDB, written from a queue of its own; the MQTT outbox's rows.
        .target(name: "StepStore", dependencies: [
            "StepProcessing", "StepProtocol", "Locking", "Timekeeping",
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ], path: "Sources/StepStore"),
        // Publishing to an MQTT broker (libmosquitto, loaded when configured): the fleet and Home Assistant.
        .target(name: "StepFleet", dependencies: [
            "StepEngine", "StepStore", "StepProcessing", "StepProtocol", "Locking", "Timekeeping", "CMosquitto", "CLibCrypto", "CLibSSL",
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepFleet"),
        // The socket server: the JSON protocol over a Unix socket (swift-nio).
        .target(name: "StepServer", dependencies: [
            "StepEngine", "StepStore", "StepFleet", "StepLogging", "StepProcessing", "StepProtocol", "Locking", "Timekeeping",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepServer"),
        // The daemon as a system service: its configuration, start and stop, systemd's protocols, and the engine
        // joined to the store.
        .target(name: "StepService", dependencies: [
            "StepEngine", "StepStore", "StepFleet", "StepServer", "StepLogging",
            "StepProcessing", "StepProtocol", "Locking", "Timekeeping",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepService"),
        // Research: `stepd analyze` (recordings to steps, bouts and figures) and `stepd bench` (the accuracy tables).
        .target(name: "StepResearch", dependencies: [
            "StepAcquisition", "StepProcessing", "StepProtocol", "Locking", "Timekeeping",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/StepResearch"),

        .executableTarget(name: "stepd", dependencies: [
            "StepAcquisition", "StepEngine", "StepStore", "StepFleet", "StepServer", "StepService", "StepResearch",
            "StepLogging", "Locking", "Timekeeping", "StepctlCommands", "StepdWebCommands",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/stepd", exclude: ["stepd.order"], linkerSettings: [
            .unsafeFlags(daemonLinkFlags, .when(platforms: [.linux], configuration: .release)),
        ]),
        // stepctl's commands, run by stepd when it is called as stepctl.
        .target(name: "StepctlCommands", dependencies: [
            "StepProtocol", "Locking", "Timekeeping",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Sources/stepctl"),
        // The web dashboard: a client of the socket serving one page over HTTP (docs/web.md). Its page lives in
        // Public/ and is installed under share/stepd-web, not compiled in, so that it can be read and changed.
        // Run by stepd when it is called as stepd-web.
        .target(name: "StepdWebCommands", dependencies: [
            "StepProtocol", "StepLogging", "Locking", "Timekeeping",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "NIOExtras", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/stepd-web", exclude: ["Public"]),

        // What the test targets share (hostile request lines, a barometer's track); not part of the product.
        .target(name: "TestSupport", dependencies: ["StepProcessing", "Timekeeping", "Locking"], path: "Tests/TestSupport",
                swiftSettings: testCodeSettings),
        .testTarget(name: "StepProcessingTests", dependencies: ["StepProcessing", "TestSupport"], path: "Tests/StepProcessingTests", swiftSettings: testCodeSettings),
        .testTarget(name: "StepServiceTests", dependencies: ["StepProcessing", "StepProtocol", "StepEngine", "StepStore", "StepFleet", "StepServer", "StepService", "StepLogging", "Locking", "Timekeeping", "TestSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio")], path: "Tests/StepServiceTests", swiftSettings: testCodeSettings),
        .testTarget(name: "StepdIntegrationTests", dependencies: ["StepProtocol", "StepAcquisition", "Locking", "TestSupport"],
                    path: "Tests/StepdIntegrationTests", swiftSettings: testCodeSettings),
    ]
)

