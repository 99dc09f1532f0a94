// swift-tools-version: 6.0
import PackageDescription

// Run with `swift run -c release --package-path Benchmarks`; see Docs/Performance.md.
let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../")
    ],
    targets: [
        // Counts calls to malloc and friends on glibc, so that the benchmark can report allocations per request.
        .target(name: "CAllocationCounter"),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "CAllocationCounter",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
