// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Rebound",
    // `Clock` and `Duration` set the floor on Apple platforms.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Rebound", targets: ["Rebound"]),
        .library(name: "ReboundTesting", targets: ["ReboundTesting"]),
    ],
    targets: [
        .target(name: "Rebound"),
        .target(name: "ReboundTesting", dependencies: ["Rebound"]),
        .testTarget(name: "ReboundTests", dependencies: ["Rebound", "ReboundTesting"]),
        .testTarget(name: "ReboundTestingTests", dependencies: ["Rebound", "ReboundTesting"]),
        .testTarget(name: "ReboundIntegrationTests", dependencies: ["Rebound", "ReboundTesting"]),
        // Allocations and memory per request are held by Benchmarks/ReboundAllocations (ordo-one/benchmark), in CI.
    ],
    swiftLanguageModes: [.v6]
)

// Upcoming language features, turned on for every target in one place.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
