// swift-tools-version: 6.0
import PackageDescription

// Rebound's bridge to swift-distributed-tracing, a package of its own so that the root keeps no dependencies and a
// user who adds it builds swift-distributed-tracing and Rebound, nothing else (see Docs/Architecture.md).
let package = Package(
    name: "ReboundTracing",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ReboundTracing", targets: ["ReboundTracing"])
    ],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../.."),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "ReboundTracing",
            dependencies: [
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        // `swift run --package-path Integrations/ReboundTracing ReboundTracingExample`: offline, on a local server.
        .executableTarget(
            name: "ReboundTracingExample",
            dependencies: [
                "ReboundTracing",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                // Its InMemoryTracer keeps the spans, which the example prints.
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]),
        .testTarget(
            name: "ReboundTracingTests",
            dependencies: [
                "ReboundTracing",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
