// swift-tools-version: 6.1
import PackageDescription

// Rebound on AsyncHTTPClient against plain AsyncHTTPClient, side by side, on ordo-one/benchmark:
// `swift package --package-path Integrations/ReboundAsyncHTTPClient/SideBySide benchmark`. A package of its own, so
// that a user of ReboundAsyncHTTPClient resolves no benchmark harness (Docs/AsyncHTTPClient.md, "Performance").
let package = Package(
    name: "ReboundAsyncHTTPClientBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../../.."),
        .package(path: "../"),
        // The pieces every side-by-side benchmark is made of (interleaved rounds, the server in a child process).
        .package(name: "Benchmarks", path: "../../../Benchmarks"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "AsyncHTTPClientSideBySide",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SideBySide", package: "Benchmarks"),
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "ReboundAsyncHTTPClient", package: "ReboundAsyncHTTPClient"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Benchmarks/AsyncHTTPClientSideBySide",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ],
    swiftLanguageModes: [.v6]
)
