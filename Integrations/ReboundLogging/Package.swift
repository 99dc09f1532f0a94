// swift-tools-version: 6.0
import PackageDescription

// Rebound's bridge to swift-log, a package of its own so that the root keeps no dependencies and a user who adds it
// builds swift-log and Rebound, nothing else (see Docs/Architecture.md, "Integrations").
let package = Package(
    name: "ReboundLogging",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ReboundLogging", targets: ["ReboundLogging"])
    ],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "ReboundLogging",
            dependencies: [
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // `swift run --package-path Integrations/ReboundLogging ReboundLoggingExample`: offline, on a local server.
        .executableTarget(
            name: "ReboundLoggingExample",
            dependencies: [
                "ReboundLogging",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "ReboundLoggingTests",
            dependencies: [
                "ReboundLogging",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
