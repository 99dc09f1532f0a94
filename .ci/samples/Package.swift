// swift-tools-version: 6.0
// Builds the modules that the samples of the guides import besides Rebound and the integrations (swift-log's
// Logging, swift-clocks' Clocks), so that .ci/samples/run can compile those samples too. Not a product: nothing
// depends on it.
import PackageDescription

let package = Package(
    name: "SampleModules",
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
    ],
    targets: [
        .target(
            name: "SampleModules",
            dependencies: [
                .product(name: "Logging", package: "swift-log"), .product(name: "Clocks", package: "swift-clocks"),
            ])
    ]
)
