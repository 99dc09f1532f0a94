// swift-tools-version: 6.0
// Builds the modules that the samples of the guides import besides Rebound (swift-log's Logging, swift-clocks'
// Clocks, the integrations under Integrations/), so that .ci/samples/run can compile those samples too. Not a
// product: nothing depends on it.
import PackageDescription

let package = Package(
    name: "SampleModules",
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(path: "../../Integrations/ReboundLogging"),
        .package(path: "../../Integrations/ReboundMetrics"),
        .package(path: "../../Integrations/ReboundTracing"),
        .package(path: "../../Integrations/ReboundOpenAPI"),
    ],
    targets: [
        .target(
            name: "SampleModules",
            dependencies: [
                .product(name: "Logging", package: "swift-log"), .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "ReboundLogging", package: "ReboundLogging"),
                .product(name: "ReboundMetrics", package: "ReboundMetrics"),
                .product(name: "ReboundTracing", package: "ReboundTracing"),
                .product(name: "ReboundOpenAPI", package: "ReboundOpenAPI"),
            ])
    ]
)
