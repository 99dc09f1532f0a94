// swift-tools-version: 6.1
import PackageDescription

// On ordo-one/benchmark: `swift package --package-path Benchmarks benchmark`; see Docs/Performance.md.
let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        // What a side-by-side benchmark is made of (interleaved rounds, the server in a child process).
        .library(name: "SideBySide", targets: ["SideBySide"])
    ],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        // The AsyncHTTPClient trait for the benchmark on AsyncHTTPClient; the others use the core alone.
        .package(name: "Rebound", path: "../", traits: ["AsyncHTTPClient"]),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // ordo-one's harness; its malloc interposer is the trait these machines can build.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "SideBySide",
            dependencies: [
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
            ]
        ),
        // `python3 Benchmarks/instructions`: instructions and simulated cache misses per request under Valgrind's
        // cachegrind, which are nearly deterministic where timings are not (Docs/Performance.md). Not a benchmark of
        // ordo-one's: Valgrind 3.19 crashes in their start-up.
        .executableTarget(
            name: "ReboundInstructions",
            dependencies: [
                "SideBySide",
                .product(name: "Rebound", package: "Rebound"),
            ]
        ),
        // `swift package --package-path Benchmarks benchmark --target ReboundAllocations`: allocations and memory per
        // request, which are deterministic; `… benchmark thresholds check --target ReboundAllocations` (in CI) fails
        // when one moves more than 10% from Benchmarks/Thresholds.
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
        // `swift package --package-path Benchmarks benchmark --target ReboundSideBySide`: Rebound against plain
        // URLSession and hand-written code, side by side in interleaved rounds, over loopback to a server in a child
        // process; timings, so never run in CI (Docs/Performance.md).
        .executableTarget(
            name: "ReboundSideBySide",
            dependencies: [
                "SideBySide",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
            ],
            path: "Benchmarks/ReboundSideBySide",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // `swift package --package-path Benchmarks benchmark --target AsyncHTTPClientSideBySide`: Rebound on
        // AsyncHTTPClient against plain AsyncHTTPClient, the same way (Docs/AsyncHTTPClient.md, "Performance").
        .executableTarget(
            name: "AsyncHTTPClientSideBySide",
            dependencies: [
                "SideBySide",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "ReboundAsyncHTTPClient", package: "Rebound"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Benchmarks/AsyncHTTPClientSideBySide",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
