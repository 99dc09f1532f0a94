// swift-tools-version: 6.1
import PackageDescription

// The core (`Rebound`, `ReboundTesting`) depends on nothing. Each bridge to an ecosystem package is a product of its
// own behind a trait that is off by default, and each package dependency below is used only under its trait: a package
// that adds Rebound and enables no trait resolves no other package (Swift 6.2 and later; see the README).
//
//     .package(url: "https://github.com/…/Rebound", from: "1.0.0", traits: ["Logging"])
//
// Here: `swift build --traits Logging,Metrics` or `--enable-all-traits`; `swift test` tests the core alone.
let package = Package(
    name: "Rebound",
    // `Clock` and `Duration` set the floor on Apple platforms.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Rebound", targets: ["Rebound"]),
        .library(name: "ReboundTesting", targets: ["ReboundTesting"]),
        .library(name: "ReboundAsyncHTTPClient", targets: ["ReboundAsyncHTTPClient"]),
        .library(name: "ReboundOpenAPI", targets: ["ReboundOpenAPI"]),
        .library(name: "ReboundLogging", targets: ["ReboundLogging"]),
        .library(name: "ReboundMetrics", targets: ["ReboundMetrics"]),
        .library(name: "ReboundTracing", targets: ["ReboundTracing"]),
    ],
    traits: [
        .trait(name: "AsyncHTTPClient", description: "ReboundAsyncHTTPClient: a transport on AsyncHTTPClient."),
        .trait(name: "OpenAPI", description: "ReboundOpenAPI: a middleware and a transport for generated clients."),
        .trait(name: "Logging", description: "ReboundLogging: LoggingRetrier and breakers on a swift-log Logger."),
        .trait(name: "Metrics", description: "ReboundMetrics: attempts, retries and breakers as swift-metrics."),
        .trait(name: "Tracing", description: "ReboundTracing: a span per request and per attempt."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // AsyncHTTPClient's own TLS: its errors say when a handshake failed before a request was written.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Only the OpenAPI example and its tests send through it, as most apps do; ReboundOpenAPI does not.
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        // Only the metrics example reports through it, as a service would; a user of ReboundMetrics never resolves it.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .target(name: "Rebound"),
        .target(name: "ReboundTesting", dependencies: ["Rebound"]),
        .testTarget(name: "ReboundTests", dependencies: ["Rebound", "ReboundTesting"]),
        .testTarget(name: "ReboundTestingTests", dependencies: ["Rebound", "ReboundTesting"]),
        .testTarget(name: "ReboundIntegrationTests", dependencies: ["Rebound", "ReboundTesting"]),
        // Allocations and memory per request are held by Benchmarks/ReboundAllocations (ordo-one/benchmark), in CI.

        // The bridges. Each compiles to an empty module without its trait (its files are inside `#if <trait>`), so
        // that `swift build` and `swift test` of this package need none of the packages above. Each has an example,
        // offline against a local server: `swift run --traits Logging ReboundLoggingExample`.
        .target(
            name: "ReboundAsyncHTTPClient",
            dependencies: [
                "Rebound",
                guarded("AsyncHTTPClient", in: "async-http-client", trait: "AsyncHTTPClient"),
                guarded("NIOCore", in: "swift-nio", trait: "AsyncHTTPClient"),
                guarded("NIOHTTP1", in: "swift-nio", trait: "AsyncHTTPClient"),
                guarded("NIOPosix", in: "swift-nio", trait: "AsyncHTTPClient"),
                guarded("NIOSSL", in: "swift-nio-ssl", trait: "AsyncHTTPClient"),
            ]),
        .executableTarget(
            name: "ReboundAsyncHTTPClientExample",
            dependencies: [
                "ReboundAsyncHTTPClient", "Rebound", "ReboundTesting",
                guarded("AsyncHTTPClient", in: "async-http-client", trait: "AsyncHTTPClient"),
            ]),
        .testTarget(
            name: "ReboundAsyncHTTPClientTests",
            dependencies: [
                "ReboundAsyncHTTPClient", "Rebound", "ReboundTesting",
                guarded("AsyncHTTPClient", in: "async-http-client", trait: "AsyncHTTPClient"),
                guarded("NIOSSL", in: "swift-nio-ssl", trait: "AsyncHTTPClient"),
            ]),
        .target(
            name: "ReboundOpenAPI",
            dependencies: [
                "Rebound",
                guarded("OpenAPIRuntime", in: "swift-openapi-runtime", trait: "OpenAPI"),
                guarded("HTTPTypes", in: "swift-http-types", trait: "OpenAPI"),
            ]),
        // It holds the client generated from Tests/ReboundOpenAPITests/openapi.yaml (Generated/, committed: see its
        // README), which the tests use too, through `@testable import`.
        .executableTarget(
            name: "ReboundOpenAPIExample",
            dependencies: [
                "ReboundOpenAPI", "Rebound", "ReboundTesting",
                guarded("OpenAPIRuntime", in: "swift-openapi-runtime", trait: "OpenAPI"),
                guarded("HTTPTypes", in: "swift-http-types", trait: "OpenAPI"),
                guarded("OpenAPIURLSession", in: "swift-openapi-urlsession", trait: "OpenAPI"),
            ],
            exclude: ["Generated/README.md"]),
        .testTarget(
            name: "ReboundOpenAPITests",
            dependencies: [
                "ReboundOpenAPI", "ReboundOpenAPIExample", "Rebound", "ReboundTesting",
                guarded("OpenAPIRuntime", in: "swift-openapi-runtime", trait: "OpenAPI"),
                guarded("OpenAPIURLSession", in: "swift-openapi-urlsession", trait: "OpenAPI"),
                guarded("HTTPTypes", in: "swift-http-types", trait: "OpenAPI"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"]),
        .target(
            name: "ReboundLogging",
            dependencies: [
                "Rebound", guarded("Logging", in: "swift-log", trait: "Logging"),
            ]),
        .executableTarget(
            name: "ReboundLoggingExample",
            dependencies: [
                "ReboundLogging", "Rebound", "ReboundTesting",
                guarded("Logging", in: "swift-log", trait: "Logging"),
            ]),
        .testTarget(
            name: "ReboundLoggingTests",
            dependencies: [
                "ReboundLogging", "Rebound", "ReboundTesting",
                guarded("Logging", in: "swift-log", trait: "Logging"),
                guarded("InMemoryLogging", in: "swift-log", trait: "Logging"),
            ]),
        .target(
            name: "ReboundMetrics",
            dependencies: [
                "Rebound", guarded("Metrics", in: "swift-metrics", trait: "Metrics"),
            ]),
        .executableTarget(
            name: "ReboundMetricsExample",
            dependencies: [
                "ReboundMetrics", "Rebound", "ReboundTesting",
                guarded("Metrics", in: "swift-metrics", trait: "Metrics"),
                // A real backend, whose text format the example prints: what a scrape of the service would read.
                guarded("Prometheus", in: "swift-prometheus", trait: "Metrics"),
            ]),
        .testTarget(
            name: "ReboundMetricsTests",
            dependencies: [
                "ReboundMetrics", "Rebound", "ReboundTesting",
                guarded("Metrics", in: "swift-metrics", trait: "Metrics"),
                guarded("MetricsTestKit", in: "swift-metrics", trait: "Metrics"),
            ]),
        .target(
            name: "ReboundTracing",
            dependencies: [
                "Rebound",
                guarded("Tracing", in: "swift-distributed-tracing", trait: "Tracing"),
            ]),
        .executableTarget(
            name: "ReboundTracingExample",
            dependencies: [
                "ReboundTracing", "Rebound", "ReboundTesting",
                guarded("Tracing", in: "swift-distributed-tracing", trait: "Tracing"),
                // Its InMemoryTracer keeps the spans, which the example prints.
                guarded("InMemoryTracing", in: "swift-distributed-tracing", trait: "Tracing"),
            ]),
        .testTarget(
            name: "ReboundTracingTests",
            dependencies: [
                "ReboundTracing", "Rebound", "ReboundTesting",
                guarded("Tracing", in: "swift-distributed-tracing", trait: "Tracing"),
                guarded("InMemoryTracing", in: "swift-distributed-tracing", trait: "Tracing"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

/// Product `name` of package `package`, used only when `trait` is enabled (one trait per condition: SwiftPM 6.2 reads
/// a condition that names several as all of them).
func guarded(_ name: String, in package: String, trait: String) -> Target.Dependency {
    .product(name: name, package: package, condition: .when(traits: [trait]))
}

// Upcoming language features, turned on for every target in one place.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
