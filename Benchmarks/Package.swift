// swift-tools-version: 6.1
import PackageDescription

// Run with `swift run -c release --package-path Benchmarks`; see Docs/Performance.md.
let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../"),
        // ordo-one's harness, for the allocation counts CI holds (Benchmarks/ReboundAllocations); its malloc
        // interposer is the trait these machines can build.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
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
        // `swift package --package-path Benchmarks benchmark --target ReboundAllocations`: allocations per request,
        // which are deterministic; `… benchmark thresholds check --target ReboundAllocations` (in CI) fails when one
        // grows more than 10% over Benchmarks/Thresholds.
        .executableTarget(
            name: "ReboundAllocations",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
            ],
            path: "Benchmarks/ReboundAllocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
