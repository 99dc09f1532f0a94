// swift-tools-version: 6.0
import PackageDescription

// Rebound's bridge to swift-metrics, a package of its own so that the root keeps no dependencies and a user who adds it
// builds swift-metrics and Rebound, nothing else (see Docs/Architecture.md, "Integrations").
let package = Package(
    name: "ReboundMetrics",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ReboundMetrics", targets: ["ReboundMetrics"])
    ],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../.."),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "ReboundMetrics",
            dependencies: [
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]),
        // `swift run --package-path Integrations/ReboundMetrics ReboundMetricsExample`: offline, on a local server.
        .executableTarget(
            name: "ReboundMetricsExample",
            dependencies: [
                "ReboundMetrics",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Metrics", package: "swift-metrics"),
                // Its StreamMetricsFactory prints each metric as it changes, for examples.
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "ReboundMetricsTests",
            dependencies: [
                "ReboundMetrics",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
