// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Rebound",
    // Synchronization's `Mutex` sets the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
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
    ],
    swiftLanguageModes: [.v6]
)

// Upcoming language features, turned on for every target in one place.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
