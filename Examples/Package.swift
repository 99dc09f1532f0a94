// swift-tools-version: 6.0
import PackageDescription

let examples = [
    "Demo", "LoggingExample", "JSONBodyExample", "CircuitBreakerExample", "AuthenticationExample", "RetrySafetyExample",
    "BackoffChart", "StormSimulator", "LiveStorm",
]

let package = Package(
    name: "Examples",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../")
    ],
    targets: [
        .target(name: "ExampleSupport", dependencies: [.product(name: "Rebound", package: "Rebound")])
    ]
        + examples.map { name in
            .executableTarget(
                name: name,
                dependencies: [
                    "ExampleSupport",
                    .product(name: "Rebound", package: "Rebound"),
                    .product(name: "ReboundTesting", package: "Rebound"),
                ]
            )
        },
    swiftLanguageModes: [.v6]
)
