// swift-tools-version: 6.0
import PackageDescription

// Rebound's transport on AsyncHTTPClient. A package of its own, so that the root keeps no dependencies and only a
// user who adds it builds SwiftNIO and BoringSSL (see Docs/Architecture.md).
let package = Package(
    name: "ReboundAsyncHTTPClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ReboundAsyncHTTPClient", targets: ["ReboundAsyncHTTPClient"])
    ],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // For the types the transport maps (ByteBuffer, the errors); async-http-client depends on it already.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "ReboundAsyncHTTPClient",
            dependencies: [
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // `swift run --package-path Integrations/ReboundAsyncHTTPClient ReboundAsyncHTTPClientExample`: offline.
        .executableTarget(
            name: "ReboundAsyncHTTPClientExample",
            dependencies: [
                "ReboundAsyncHTTPClient",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        // The benchmark against plain AsyncHTTPClient is the package in SideBySide/ (on ordo-one/benchmark), so that
        // a user of this one resolves no benchmark harness.
        .testTarget(
            name: "ReboundAsyncHTTPClientTests",
            dependencies: [
                "ReboundAsyncHTTPClient",
                .product(name: "Rebound", package: "Rebound"),
                .product(name: "ReboundTesting", package: "Rebound"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
